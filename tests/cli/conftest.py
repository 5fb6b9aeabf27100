"""The benchmark package lives at the repository root (not installed): make it importable even
when pytest is started as a script rather than with ``python -m pytest`` from the root."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
