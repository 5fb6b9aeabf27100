"""The relay tests' path to the editor stand-in (``relay_dir`` is the suite's, tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))  # the editor stand-in (lsp_support)
