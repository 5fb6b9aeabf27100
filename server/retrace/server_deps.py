"""Whether this Python has what the server needs, answered without importing the server.

The extension asks before every server start (serverEnv.ts ``PROBE_SCRIPT``, run with the
interpreter the server will run on). It used to import ``retrace.lsp.server`` to find out: pygls,
lsprotocol, pydantic and the rest, about 1.3 CPU-seconds and a second of wall time on every
window's start, after which the server imported them all again. Now the answer comes from the
installed distributions' metadata (tens of milliseconds): every requirement of the
``retrace-checkpoints`` distribution that applies to every install (no marker) must be installed,
and the server module must be there. What metadata cannot show (a package whose files were
damaged after install) is the server's own start-up error, which the extension logs.

Without that metadata (the package put on ``sys.path`` by hand), the server is imported: the
slow answer, but still a true one.

Kept to the standard library and to syntax every Python 3 parses, like the probe itself: an old
interpreter must still get as far as reporting its version.
"""

from __future__ import annotations

import re
from importlib import metadata, util

DISTRIBUTION = "retrace-checkpoints"
"""The distribution that installs the ``retrace`` package (pyproject ``name``)."""

SERVER_MODULE = "retrace.lsp.server"

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def unconditional(requirements: list[str]) -> list[str]:
    """The distribution names of the requirements without a marker (PEP 508 strings). A marker
    (``extra == "dev"``, ``sys_platform == "win32"``) is left out: extras are the provider's
    business (``agent/model/cloud.py``) and evaluating environment markers needs ``packaging``,
    which the server does not depend on; such a requirement is checked by the server's start."""
    names = []
    for requirement in requirements:
        match = _NAME.match(requirement)
        if match is not None and ";" not in requirement:
            names.append(match.group(1))
    return names


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def problem() -> str | None:
    """Why this Python cannot run the server (one line), or ``None`` when it can."""
    try:
        requirements = metadata.distribution(DISTRIBUTION).requires or []
    except metadata.PackageNotFoundError:
        try:
            __import__(SERVER_MODULE)
        except Exception as e:  # whatever stops the import is the answer
            return f"{type(e).__name__}: {e}"
        return None
    missing = [name for name in unconditional(requirements) if not _installed(name)]
    if missing:
        return f"the server's packages are not all installed: {', '.join(missing)} missing"
    if util.find_spec(SERVER_MODULE) is None:
        return f"{SERVER_MODULE} is missing"
    return None
