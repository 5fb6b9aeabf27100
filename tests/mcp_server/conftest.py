"""The ``retrace mcp`` tests' support paths (``relay_dir`` is the suite's, tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # mcp_support
sys.path.insert(0, str(HERE.parent / "lsp"))  # the editor stand-in (lsp_support)
