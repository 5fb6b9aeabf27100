"""Which folder a remote session belongs to, and where each folder of a workspace syncs (pure).

Every store syncs under ``<prefix>/<workspace name>/`` (:func:`retrace.sync.config.key_prefix`).
In a multi-root workspace each folder has its own store, so each needs its own key prefix, else
one folder would list — and could open — another folder's sessions, whose restore would write that
folder's files here. :func:`folder_workspace_names` is THE rule, for the server's settings:

- the **first** folder keeps the name a single-folder workspace has always had: the explicit
  ``retrace.remote.workspaceName``, else its own default (:func:`slug` of its directory name), so
  a workspace with one folder syncs exactly as before;
- **every other** folder: ``<workspaceName>/<folder name>`` when ``workspaceName`` is set (the
  folder's name as the workspace names it, slugged: stable across machines sharing the workspace
  file), else the folder's own default name, as if it were opened alone;
- a folder whose name would be another folder's (two folders of one name), or a component that is
  one of the bucket's own key kinds (``stores``, ``packs``, ``sessions``, ``gc``), gets no name:
  its sync stays off, with the reason (never a shared prefix).

Every store card records the pusher's ``workspaceName`` and, for a folder of a multi-root
workspace, its ``folder`` (:attr:`retrace.sync.models.RemoteConfig.folder`). Opening or pulling a
session checks them (:func:`check_card`): a card naming another workspace name, or another folder
when both sides know theirs, is refused with one line and nothing is written. A card that says
neither (a store from before the card carried them, an unreadable one) is accepted, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from retrace.sync.errors import RemoteError

RESERVED = frozenset({"stores", "packs", "sessions", "gc"})
"""The first components of the keys under a workspace prefix: never a folder's name component."""


def slug(name: str) -> str:
    """A folder or directory name as one key component (letters, digits, ``._-``)."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return out or "workspace"


@dataclass(frozen=True)
class FolderName:
    """A folder's remote workspace name, or why it has none (``error``); ``folder``: its name for
    the store card (only when the workspace has several folders)."""

    name: str | None
    error: str | None = None
    folder: str | None = None


def folder_workspace_names(explicit: str | None, folders: Sequence[tuple[str, str]]) -> list[FolderName]:
    """``folders``: ``(name, directory name)`` of each folder, the first first. Returns each
    folder's remote name, in the same order (see the module docstring)."""
    out: list[FolderName] = []
    taken: dict[str, str] = {}
    several = len(folders) > 1
    for i, (name, dirname) in enumerate(folders):
        if i == 0:
            derived = explicit or slug(dirname)
        else:
            part = slug(name)
            derived = f"{explicit}/{part}" if explicit else part
            if part in RESERVED:
                reason = f"folder {name!r}: {part!r} is reserved in a bucket: rename the folder"
                out.append(FolderName(None, reason))
                continue
        if derived in taken:
            reason = f"folder {name!r} would sync under {derived!r}, like folder {taken[derived]!r}: sync off"
            out.append(FolderName(None, reason))
            continue
        taken[derived] = name
        out.append(FolderName(derived, folder=name if several else None))
    return out


def check_card(
    card: Mapping[str, str], workspace_name: str, folder: str | None, session_id: str, store_id: str
) -> None:
    """Refuse a session whose store card says it belongs to another workspace name or folder."""
    theirs = card.get("workspaceName")
    if theirs and theirs != workspace_name:
        raise RemoteError(
            f"session {session_id} was pushed by store {store_id} of workspace {theirs!r}, "
            f"not {workspace_name!r}: not opened here (open it in its own folder)"
        )
    their_folder = card.get("folder")
    if their_folder and folder and their_folder != folder:
        raise RemoteError(
            f"session {session_id} was pushed by store {store_id} of folder {their_folder!r}, "
            f"not this folder {folder!r}: not opened here (open it in its own folder)"
        )
