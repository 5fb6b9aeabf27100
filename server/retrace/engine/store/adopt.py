"""Adopting a folder's existing store into its home (:mod:`retrace.engine.store.home`).

Older extensions kept a folder's store in VS Code's workspace storage (``<workspaceStorage>/
<id>/retrace.retrace/store``); the extension now names that old place to its server, which calls
:func:`adopt` once at start-up, before anything opens a store. The decision is the pure
:func:`decide` over observed :class:`Facts` (table-tested); :func:`adopt` observes and acts.

- Home missing, old store valid (its ``store.json`` records this folder), not locked: it is moved
  home with ONE ``rename`` (same file system), under the old store's own writer lock.
- The rename fails (another file system, ``EXDEV``, or any other doubt): nothing is copied; a
  pointer beside the home names the old store (:func:`~retrace.engine.store.home.write_pointer`),
  which :func:`~retrace.engine.store.home.default_store_dir` follows for every process.
- Home present (or a valid pointer already): it is kept; an old store elsewhere is left alone
  (never merged), said once in the log.
- Old store locked (an older server still runs on it): used where it is this time, no move.
- ``$RETRACE_STORE`` set: it names the store; the old one is left alone.

Crash safety: the only mutations are one directory ``rename`` (atomic: the store is either at
the old place or at home, whole) and one pointer written by ``os.replace`` (atomic). A kill at any
step leaves exactly one usable store, and the next start decides again from what it finds. A
rename onto a home that a concurrent process just created as an EMPTY directory replaces it
(POSIX); that process then finds the adopted store at home (no data is in an empty directory).
A non-empty home makes the rename fail, which falls back to the pointer.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.errors import StoreLocked
from retrace.engine.store import home as store_home_rule
from retrace.engine.store.lock import StoreLock

log = logging.getLogger(__name__)


class Legacy(enum.Enum):
    MISSING = "missing"
    INVALID = "invalid"
    """Not a store of this folder: no readable store.json, another workspace, a relative path,
    inside the workspace."""
    LINK = "link"
    """A valid store reached through a symbolic link: pointed at, never moved."""
    VALID = "valid"


class Action(enum.Enum):
    DEFAULT = "default"
    """Use the rule's store (home, pointer or ``$RETRACE_STORE``); nothing to do."""
    MOVE = "move"
    """Rename the old store home (falls back to POINT when the rename fails)."""
    POINT = "point"
    """Write a pointer to the old store (falls back to LEGACY when that fails)."""
    LEGACY = "legacy"
    """Use the old store where it is, this time only."""


@dataclass(frozen=True)
class Facts:
    explicit: bool
    """``$RETRACE_STORE`` is set."""
    home_has_store: bool
    pointer: Path | None
    """The store a valid pointer names."""
    legacy: Legacy
    legacy_path: Path
    locked: bool
    """The old store's writer lock is held by another process."""


@dataclass(frozen=True)
class Decision:
    action: Action
    note: str | None = None
    """What the log says about it (``None``: nothing worth a line)."""


_Rule = tuple[Callable[[Facts], bool], Action, str | None]

RULES: tuple[_Rule, ...] = (
    (lambda f: f.legacy is Legacy.MISSING, Action.DEFAULT, None),
    (
        lambda f: f.legacy is Legacy.INVALID,
        Action.DEFAULT,
        "the old store {old} is not a Retrace store of this folder: left alone",
    ),
    (
        lambda f: f.explicit,
        Action.DEFAULT,
        "$RETRACE_STORE names the store; the old store {old} is left alone",
    ),
    (
        lambda f: f.home_has_store,
        Action.DEFAULT,
        "this folder's store is at home; the old store {old} is left alone (not merged)",
    ),
    (lambda f: f.pointer == f.legacy_path, Action.DEFAULT, None),
    (
        lambda f: f.pointer is not None,
        Action.DEFAULT,
        "the store pointer names {pointer}; the old store {old} is left alone",
    ),
    (
        lambda f: f.locked,
        Action.LEGACY,
        "the old store {old} is in use by another Retrace server: used where it is this time (not moved)",
    ),
    (
        lambda f: f.legacy is Legacy.LINK,
        Action.POINT,
        "the old store {old} is reached through a link: pointed at, not moved",
    ),
)
"""The first rule whose test holds decides; none: :attr:`Action.MOVE`."""


def decide(f: Facts) -> Decision:
    """What to do with an old store, given what was observed. Pure."""
    for test, action, note in RULES:
        if test(f):
            return Decision(
                action, None if note is None else note.format(old=f.legacy_path, pointer=f.pointer)
            )
    return Decision(Action.MOVE)


@dataclass(frozen=True)
class Adoption:
    store: Path
    """The store to open."""
    action: str
    """What was done: ``default``, ``moved``, ``pointed``, ``legacy``."""


def classify(legacy: Path, workspace: Path) -> Legacy:
    """What the old store at ``legacy`` is for ``workspace`` (resolved)."""
    if not legacy.is_absolute():
        return Legacy.INVALID
    if not os.path.lexists(legacy):
        return Legacy.MISSING
    if not legacy.is_dir():
        return Legacy.INVALID
    real = Path(os.path.realpath(legacy))
    if real == workspace or workspace in real.parents:
        return Legacy.INVALID  # a store is never inside its workspace
    recorded = store_home_rule.store_workspace(legacy)
    if recorded is None or not store_home_rule.same_workspace(recorded, workspace):
        return Legacy.INVALID
    return Legacy.LINK if legacy.is_symlink() else Legacy.VALID


@contextlib.contextmanager
def _held(legacy: Path, state: Legacy) -> Iterator[bool]:
    """The old store's writer lock, held for the block when it could be taken; yields whether
    another process holds it."""
    if state not in (Legacy.VALID, Legacy.LINK):
        yield False
        return
    lock = StoreLock(legacy / "lock")
    try:
        lock.acquire()
    except StoreLocked:
        yield True
        return
    except OSError as exc:
        log.warning("cannot take the old store's lock %s (%s): treated as in use", legacy, exc)
        yield True
        return
    try:
        yield False
    finally:
        lock.release()


def adopt(workspace: Path, legacy: Path) -> Adoption:
    """The store ``workspace`` opens, after adopting the old store at ``legacy`` if there is one
    (see the module docstring). Never raises for the old store's sake: any doubt leaves it where
    it is."""
    ws = Path(os.path.realpath(workspace))
    home = store_home_rule.store_home(ws)
    state = classify(legacy, ws)
    with _held(legacy, state) as locked:
        has_store = (home / store_home_rule.META).is_file()
        facts = Facts(
            explicit=store_home_rule.explicit_store() is not None,
            home_has_store=has_store,
            pointer=store_home_rule.read_pointer(ws, home) if not has_store else None,
            legacy=state,
            legacy_path=legacy,
            locked=locked,
        )
        decision = decide(facts)
        if decision.note is not None:
            log.info("store: %s", decision.note)
        return _act(decision.action, ws, home, legacy)


def _act(action: Action, ws: Path, home: Path, legacy: Path) -> Adoption:
    if action is Action.DEFAULT:
        return Adoption(store_home_rule.default_store_dir(ws), "default")
    if action is Action.LEGACY:
        return Adoption(legacy, "legacy")
    if action is Action.MOVE:
        try:
            home.parent.mkdir(parents=True, exist_ok=True)
            legacy.rename(home)  # one rename: the store is whole at one place or the other
        except OSError as exc:
            why = "it is on another file system" if exc.errno == errno.EXDEV else f"the move failed ({exc})"
            log.info("store: the old store %s stays where it is (%s): pointing at it", legacy, why)
        else:
            log.info("store: moved the old store %s to %s", legacy, home)
            return Adoption(home, "moved")
    try:
        pointer = store_home_rule.write_pointer(ws, legacy, home)
    except OSError as exc:
        log.warning("store: cannot write the store pointer (%s): using %s where it is this time", exc, legacy)
        return Adoption(legacy, "legacy")
    log.info("store: %s now points at the old store %s", pointer, legacy)
    # The rule, not the old path: had another process just created a store at home (the reason
    # the rename failed), everyone now uses that one, this server included.
    return Adoption(store_home_rule.default_store_dir(ws), "pointed")
