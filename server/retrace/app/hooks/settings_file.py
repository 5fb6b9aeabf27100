"""The I/O edge of ``retrace integrate``: read an agent's settings file, apply the pure plan of
:mod:`retrace.app.hooks.install`, write it back. Used by the CLI (``cli/integrate.py``), the
server's ``retrace/agents/integrate`` handler and the server's start-up refresh.

Contracts:

- The user's settings are never lost. A file that is not valid JSON (comments and trailing
  commas included: Retrace cannot rewrite them without dropping them), not UTF-8, not an
  object, with a duplicate key, or larger than :data:`MAX_SETTINGS_BYTES` is refused with one
  clear line (:class:`AgentSettingsError`) and left byte for byte as it was; so is a ``hooks``
  of the wrong type (``install.SettingsShapeError``).
- No symlink is followed below the workspace: the settings folder is opened component by
  component without following links (``engine.workspace.DirTree``; a symlinked ``.claude`` is
  refused wherever it leads) and the file itself is opened ``O_NOFOLLOW`` as a regular file.
- A write is atomic: a temporary file in the same folder, fsynced, given the old file's mode,
  renamed over the file only if the file is still the one that was read (else refused: "changed
  meanwhile"), then the folder fsynced. A byte order mark and CRLF line ends are kept; the JSON
  is written with 2-space indentation. Nothing is written when the plan is ``unchanged``.
- A read-only settings file (no owner write bit) is a "do not touch": refused when it would change.
- A remove that leaves nothing of the user's deletes the file, and the settings folder when that
  leaves it empty.
- :func:`refresh` (server start-up) only rewrites a file that already holds Retrace's entries
  (another interpreter after an update); it never creates one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrace.app.hooks.install import (
    AgentInstall,
    Plan,
    hook_command,
    interpreter_of,
    is_ours,
    merge,
    remove,
)
from retrace.app.hooks.registry import INSTALLS, install_for
from retrace.engine.capture.fs import open_regular_in, read_fd
from retrace.engine.errors import RetraceError
from retrace.engine.fsops import Dir
from retrace.engine.workspace import DirTree, temp_name
from retrace.protocol.agents import AgentIntegrateResult

MAX_SETTINGS_BYTES = 1 << 20
"""Larger settings files are refused (an agent's settings are a few kilobytes)."""

_BOM = "\ufeff"


class AgentSettingsError(RetraceError):
    """An agent's settings file Retrace refuses to read or cannot write; nothing was changed."""

    code = "agentSettingsInvalid"


@dataclass(frozen=True)
class _Loaded:
    doc: dict[str, Any] | None
    """``None``: no settings file."""
    st: os.stat_result | None
    bom: bool = False
    crlf: bool = False


class _DuplicateKeyError(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # would be written back as Infinity: not JSON
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def parse_settings(data: bytes, rel: str) -> tuple[dict[str, Any], bool, bool]:
    """(the document, had a byte order mark, used CRLF) of a settings file's bytes; refused with
    one line naming ``rel`` when it is not a JSON object Retrace can rewrite without loss."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentSettingsError(f"{rel} is not UTF-8 (byte {exc.start}); left untouched") from None
    bom = text.startswith(_BOM)
    text = text.removeprefix(_BOM)
    try:
        doc = json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant, parse_float=_finite)
    except _DuplicateKeyError as exc:
        raise AgentSettingsError(f"{rel} has a {exc}; left untouched") from None
    except json.JSONDecodeError as exc:
        raise AgentSettingsError(
            f"{rel} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg}); comments and "
            "trailing commas are not supported; left untouched"
        ) from None
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise AgentSettingsError(f"{rel} is not valid JSON ({reason}); left untouched") from None
    if not isinstance(doc, dict):
        raise AgentSettingsError(f"{rel} is not a JSON object; left untouched")
    return doc, bom, "\r\n" in text


def render_settings(doc: dict[str, Any], *, bom: bool = False, crlf: bool = False) -> bytes:
    """The document as the file's bytes: 2-space JSON, UTF-8 (a lone surrogate some string held
    as a ``\\u`` escape cannot be UTF-8: then every non-ASCII character is escaped, same values)."""
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    return ((_BOM if bom else "") + text).encode("utf-8")


def _settings_dir(tree: DirTree, spec: AgentInstall, *, create: bool) -> Dir | None:
    """The settings folder (``None`` when missing and not ``create``)."""
    try:
        return tree.directory(spec.settings_dir, create=[] if create else None)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise AgentSettingsError(
            f"{spec.settings_dir} in the workspace is not a folder; left untouched"
        ) from None


def _read(tree: DirTree, dir_fd: Dir | None, spec: AgentInstall) -> _Loaded:
    if dir_fd is None:
        return _Loaded(None, None)
    try:
        fd, st = open_regular_in(tree.fs, dir_fd, spec.settings_file)
    except FileNotFoundError:
        return _Loaded(None, None)
    except OSError as exc:
        raise AgentSettingsError(
            f"{spec.settings_rel} {_not_regular(tree, dir_fd, spec.settings_file, exc)}"
        ) from None
    data = read_fd(fd, min(st.st_size, MAX_SETTINGS_BYTES) + 1, MAX_SETTINGS_BYTES + 1)  # closes fd
    if len(data) > MAX_SETTINGS_BYTES:
        raise AgentSettingsError(
            f"{spec.settings_rel} is larger than {MAX_SETTINGS_BYTES} bytes; left untouched"
        )
    doc, bom, crlf = parse_settings(data, spec.settings_rel)
    return _Loaded(doc, st, bom, crlf)


def _not_regular(tree: DirTree, dir_fd: Dir, name: str, exc: OSError) -> str:
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(tree.fs.lstat(dir_fd, name).st_mode):
            return "is a symlink; Retrace never writes through one; left untouched"
    return f"is not a regular file ({exc.strerror}); left untouched"


def _still_the_one_read(tree: DirTree, dir_fd: Dir, name: str, st: os.stat_result | None, rel: str) -> None:
    now = tree.lstat_at(dir_fd, name)
    same = (
        (now is None)
        if st is None
        else (
            now is not None
            and (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns)
            == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        )
    )
    if not same:
        raise AgentSettingsError(f"{rel} changed while Retrace was updating it; nothing written, try again")


def _write(tree: DirTree, dir_fd: Dir, spec: AgentInstall, data: bytes, st: os.stat_result | None) -> None:
    tmp = temp_name(".json")
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o644
    try:
        fd = tree.fs.create_file(dir_fd, tmp, mode)
    except OSError as exc:
        raise AgentSettingsError(f"cannot write {spec.settings_rel}: {exc.strerror}") from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if st is not None:
                tree.fs.fchmod(fd, dir_fd, tmp, mode)  # the old file's mode, whatever the umask
            os.fsync(fd)
        finally:
            os.close(fd)
        _still_the_one_read(tree, dir_fd, spec.settings_file, st, spec.settings_rel)
        tree.move(dir_fd, tmp, dir_fd, spec.settings_file, replace=True)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tree.fs.unlink(dir_fd, tmp)
        if isinstance(exc, OSError):
            raise AgentSettingsError(f"cannot write {spec.settings_rel}: {exc.strerror}") from None
        raise
    _sync_dir(tree, dir_fd)


def _delete(tree: DirTree, dir_fd: Dir, spec: AgentInstall, st: os.stat_result | None) -> None:
    _still_the_one_read(tree, dir_fd, spec.settings_file, st, spec.settings_rel)
    try:
        tree.fs.unlink(dir_fd, spec.settings_file)
    except OSError as exc:
        raise AgentSettingsError(f"cannot remove {spec.settings_rel}: {exc.strerror}") from None
    _sync_dir(tree, dir_fd)
    tree.forget(spec.settings_dir)
    with contextlib.suppress(OSError):  # only when that left it empty
        tree.fs.rmdir(tree.directory(""), spec.settings_dir)


def _sync_dir(tree: DirTree, dir_fd: Dir) -> None:
    with contextlib.suppress(OSError):
        tree.fs.fsync_dir(dir_fd)


def interpreter() -> str:
    """The Python that runs Retrace now (never resolved: a virtual environment's interpreter is a
    symlink whose target would lose the environment)."""
    if not sys.executable:
        raise AgentSettingsError("cannot tell this Python interpreter's path (sys.executable is empty)")
    return str(Path(sys.executable).absolute())


def _our_commands(doc: dict[str, Any] | None, agent: str) -> list[str]:
    hooks = doc.get("hooks") if doc else None
    if not isinstance(hooks, dict):
        return []
    return [
        h["command"]
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for h in group["hooks"]
        if is_ours(h, agent)
    ]


def _stale(doc: dict[str, Any] | None, agent: str, python: str) -> bool:
    """Retrace's entries are there and one of them runs this interpreter (an older shape) or an
    interpreter that is gone (an update moved it). An entry running another live interpreter is
    the user's choice (another Retrace install) and stays."""
    for command in _our_commands(doc, agent):
        program = interpreter_of(command)
        if program is None or program == python or not os.access(program, os.X_OK):
            return True
    return False


def integrate(
    workspace: Path,
    agent: str,
    *,
    remove_: bool = False,
    python: str | None = None,
    only_if_stale: bool = False,
) -> AgentIntegrateResult:
    """Write (or with ``remove_`` take out) Retrace's hook entries in ``agent``'s settings of
    ``workspace``. ``only_if_stale``: touch only a file whose Retrace entries need this
    interpreter (see :func:`_stale`); never create one."""
    spec = install_for(agent)
    python = python or interpreter()
    command = hook_command(spec, python)
    root = Path(workspace).expanduser().absolute()
    if not root.is_dir():
        raise AgentSettingsError(f"workspace folder not found: {root}")
    with DirTree(root) as tree:
        dir_fd = _settings_dir(tree, spec, create=False)
        loaded = _read(tree, dir_fd, spec)
        if (loaded.doc is None and remove_) or (only_if_stale and not _stale(loaded.doc, spec.name, python)):
            plan = Plan(loaded.doc, "unchanged")
        elif remove_:
            plan = remove(loaded.doc or {}, spec)
        else:
            plan = merge(loaded.doc or {}, spec, command)
        _apply(tree, dir_fd, spec, plan, loaded)
    file = str(root / spec.settings_rel)
    return AgentIntegrateResult(
        agent=spec.name,
        title=spec.title,
        file=file,
        action=plan.action,
        events=spec.event_names,
        command=command,
        notes=list(plan.notes),
    )


def _apply(tree: DirTree, dir_fd: Dir | None, spec: AgentInstall, plan: Plan, loaded: _Loaded) -> None:
    if plan.action == "unchanged":
        return
    if loaded.st is not None and not loaded.st.st_mode & stat.S_IWUSR:
        raise AgentSettingsError(f"{spec.settings_rel} is read-only; left untouched")
    if plan.doc is None:
        if dir_fd is not None:
            _delete(tree, dir_fd, spec, loaded.st)
        return
    if dir_fd is None:
        try:
            dir_fd = _settings_dir(tree, spec, create=True)
        except OSError as exc:
            raise AgentSettingsError(f"cannot write {spec.settings_rel}: {exc.strerror}") from None
        assert dir_fd is not None
    _write(tree, dir_fd, spec, render_settings(plan.doc, bom=loaded.bom, crlf=loaded.crlf), loaded.st)


def refresh(workspace: Path, python: str | None = None) -> tuple[list[AgentIntegrateResult], list[str]]:
    """At server start-up: for every agent whose settings hold Retrace's entries for an
    interpreter that is gone (an extension update) or for this one in an older shape, bring them
    up to date. Never creates a file. Returns what was looked at and one
    line per agent whose file could not be read or written (the caller logs them)."""
    results: list[AgentIntegrateResult] = []
    problems: list[str] = []
    for agent in INSTALLS:
        try:
            results.append(integrate(workspace, agent, python=python, only_if_stale=True))
        except RetraceError as exc:
            problems.append(f"{agent}: {exc}")
    return results, problems
