"""Git driven as a subprocess, plumbing only, never touching the user's index or working tree.

:class:`Repo` finds the repository that holds a workspace (``rev-parse``; the workspace may be a
subfolder: :attr:`Repo.prefix`) and runs git commands in it. Every command runs with
``GIT_INDEX_FILE`` pointing at a temporary index of our own (:meth:`Repo.temp_index`) or with no
index use at all, and with ``GIT_OPTIONAL_LOCKS=0`` so no command refreshes the user's index as a
side effect. The only ref Retrace ever writes is created or advanced by :meth:`Repo.update_ref`
with the expected old value (compare-and-swap): an existing branch is refused, never moved.

Git runs nothing of the repository's (:data:`NO_EXEC_CONFIG`): every command is given ``-c``
settings that override the repository's and the user's config for whatever plumbing could
execute: hooks (``core.hooksPath`` pointed at the null device: git looks a hook up as
``<hooksPath>/<name>``, which never exists under a device; ``reference-transaction`` and
``post-index-change`` fire from ``update-ref`` and ``read-tree``) and the fsmonitor hook. The
environment turns off a partial clone's lazy fetch of missing objects (``GIT_NO_LAZY_FETCH``: a
fetch could run a configured ``core.sshCommand``). The one diff Retrace asks for
(``format-patch``) is given ``--no-ext-diff --no-textconv``, so no ``diff.external`` or textconv
driver runs. Clean/smudge filters (``.gitattributes``) run only when git reads or writes the
working tree; Retrace's plumbing never does (blobs enter through ``fast-import``, the index
through ``update-index --index-info``). The system and global config are still read on
purpose: the user's identity (``user.name``/``user.email``) lives there.

Errors are :class:`GitHandoffError` (one line, the git message's first line).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.errors import RetraceError

FALLBACK_NAME = "Retrace"
FALLBACK_EMAIL = "retrace@localhost"
_AUTHOR = re.compile(r"^\s*([^<>]+?)\s*<([^<>]*)>\s*$")

NO_EXEC_CONFIG: tuple[str, ...] = (
    f"core.hooksPath={os.devnull}",
    "core.fsmonitor=false",
)
"""``git -c`` settings given to every command: nothing of the repository's may run (module doc)."""

NO_EXEC_ENV: Mapping[str, str] = {"GIT_NO_LAZY_FETCH": "1"}
"""Environment given to every git command, over the caller's, for the same reason."""


class GitHandoffError(RetraceError):
    """Export to git refused or failed: not a repository, a bad branch name, an existing branch,
    git missing or a git command that failed."""

    code = "gitHandoff"


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


def parse_author(text: str) -> Identity:
    """``"Name <email>"`` → :class:`Identity`; :class:`GitHandoffError` otherwise."""
    m = _AUTHOR.match(checked_text(text, "author"))
    if m is None or any(ord(c) < 32 for c in text):
        raise GitHandoffError(f"author must look like 'Name <email>', got {text!r}")
    return Identity(m.group(1), m.group(2))


def checked_text(text: str, what: str) -> str:
    """``text`` when git can be given it (valid UTF-8, no NUL); :class:`GitHandoffError` otherwise."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise GitHandoffError(f"{what} is not valid text") from None
    if "\0" in text:
        raise GitHandoffError(f"{what} contains a NUL character")
    return text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "no message"


def _config_args() -> list[str]:
    out: list[str] = []
    for setting in NO_EXEC_CONFIG:
        out += ["-c", setting]
    return out


class Repo:
    """The git repository holding ``workspace``; :class:`GitHandoffError` when there is none."""

    def __init__(self, workspace: Path) -> None:
        if shutil.which("git") is None:
            raise GitHandoffError("git is not installed (or not on PATH)")
        self.workspace = workspace
        self._env = {k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"}
        self._env["GIT_OPTIONAL_LOCKS"] = "0"
        self._env["GIT_TERMINAL_PROMPT"] = "0"
        self._env.update(NO_EXEC_ENV)
        self._index: str | None = None
        try:
            out = self.run(["rev-parse", "--is-inside-work-tree", "--show-prefix"]).splitlines()
        except GitHandoffError:
            raise GitHandoffError(f"not a git repository: {workspace}") from None
        if not out or out[0] != "true":
            raise GitHandoffError(f"not inside a git working tree: {workspace}")
        self.prefix = out[1] if len(out) > 1 else ""
        """The workspace's path inside the repository, ``""`` or ending in ``/``."""
        self.object_format = self.run(["rev-parse", "--show-object-format"]).strip() or "sha1"
        self.zero_oid = "0" * (64 if self.object_format == "sha256" else 40)

    # ------------------------------------------------------------------ running git
    def run(
        self,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """Run ``git args`` in the workspace; its stdout (text). Failure → :class:`GitHandoffError`."""
        full_env = dict(self._env)
        if self._index is not None:
            full_env["GIT_INDEX_FILE"] = self._index
        full_env.update(env or {})
        for arg in args:
            checked_text(arg, "a git argument")
        try:
            proc = subprocess.run(
                ["git", *_config_args(), *args],
                cwd=self.workspace,
                input=input,
                capture_output=True,
                env=full_env,
                check=False,
            )
        except OSError as exc:
            raise GitHandoffError(f"git could not be run: {exc}") from None
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", errors="replace")
            raise GitHandoffError(f"git {args[0]} failed: {_first_line(err)}")
        return proc.stdout.decode("utf-8", errors="surrogateescape")

    @contextmanager
    def temp_index(self) -> Iterator[None]:
        """Every command inside uses a fresh, empty index file in a temporary directory."""
        with tempfile.TemporaryDirectory(prefix="retrace-git-") as tmp:
            self._index = str(Path(tmp) / "index")
            try:
                yield
            finally:
                self._index = None

    # ------------------------------------------------------------------ queries
    def commit_of(self, rev: str) -> str | None:
        """The commit ``rev`` names; ``None`` for ``HEAD`` when it is unborn."""
        if rev.startswith("-"):
            raise GitHandoffError(f"not a revision: {rev!r}")
        try:
            return self.run(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"]).strip()
        except GitHandoffError:
            if rev == "HEAD":
                return None
            raise GitHandoffError(f"unknown revision (no such commit): {rev}") from None

    def ref_value(self, ref: str) -> str | None:
        try:
            return self.run(["rev-parse", "--verify", "-q", ref]).strip() or None
        except GitHandoffError:
            return None

    def branch_ref(self, name: str) -> str:
        """``refs/heads/<name>`` for a valid new branch name (``check-ref-format --branch``)."""
        if (
            not name
            or name.startswith("-")
            or "@{" in name
            or any(ord(c) < 32 for c in checked_text(name, "the branch name"))
        ):
            raise GitHandoffError(f"invalid branch name: {name!r}")
        try:
            checked = self.run(["check-ref-format", "--branch", name]).strip()
        except GitHandoffError:
            raise GitHandoffError(f"invalid branch name: {name!r}") from None
        if checked != name:
            raise GitHandoffError(f"invalid branch name: {name!r}")
        return f"refs/heads/{name}"

    def identity(self, author: Identity | None) -> tuple[dict[str, str], bool]:
        """Environment for ``commit-tree``: the author given, else the user's git identity, else
        the fallback ``Retrace <retrace@localhost>``; and whether the fallback was used."""
        env: dict[str, str] = {}
        fallback = False
        for role in ("AUTHOR", "COMMITTER"):
            try:
                self.run(["var", f"GIT_{role}_IDENT"])
            except GitHandoffError:
                env[f"GIT_{role}_NAME"] = FALLBACK_NAME
                env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
                fallback = True
        if author is not None:
            env["GIT_AUTHOR_NAME"] = author.name
            env["GIT_AUTHOR_EMAIL"] = author.email
        return env, fallback

    # ------------------------------------------------------------------ writes
    def commit_tree(self, tree: str, parent: str | None, message: str, env: Mapping[str, str]) -> str:
        args = ["commit-tree", tree]
        if parent is not None:
            args += ["-p", parent]
        data = checked_text(message, "the commit message").encode("utf-8")
        return self.run([*args, "-F", "-"], input=data, env=env).strip()

    def update_ref(self, ref: str, new: str, old: str | None, reason: str) -> None:
        """Set ``ref`` to ``new`` only if it still holds ``old`` (``None``: does not exist)."""
        try:
            self.run(["update-ref", "-m", reason, ref, new, old or self.zero_oid])
        except GitHandoffError as exc:
            if old is None and self.ref_value(ref) is not None:
                raise GitHandoffError(f"branch {ref.removeprefix('refs/heads/')} already exists") from None
            raise exc from None
