"""A checkpoint's files as a git tree, built in a temporary index on top of a base tree.

Only what Retrace owns changes: a path the checkpoint holds is set (mode 100644, 100755 or
120000 for a symlink, blob = its exact bytes); a path of the base tree the checkpoint lacks is
deleted only when the checkpoint's own capture rules would have recorded it (the engine's
:class:`~retrace.engine.capture.ignore.Ignorer` over the checkpoint's ``.gitignore`` files), so
committed files Retrace never tracks (ignored build output, a vendored tool folder) are kept.
Gitlinks (submodules) of the base are never touched.

Blobs are written by one ``git fast-import`` per tree (only those git does not already have,
asked by one ``cat-file --batch-check``); nothing is written before every content was read and
verified by the engine, so a damaged blob refuses the export before any commit exists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from retrace.app.handoff.git import GitHandoffError, Repo
from retrace.engine import Engine
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.models import FileEntry

GITLINK = "160000"


def git_mode(entry: FileEntry) -> str:
    if entry.kind == "symlink":
        return "120000"
    return "100755" if entry.executable else "100644"


def git_blob_id(data: bytes, object_format: str) -> str:
    """The git object id of a blob holding ``data``."""
    h = hashlib.sha256() if object_format == "sha256" else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


class TreeBuilder:
    """A temporary index (the caller holds :meth:`Repo.temp_index`) that follows checkpoints."""

    def __init__(self, repo: Repo, engine: Engine, oids: dict[str, str] | None = None) -> None:
        self.repo = repo
        self.engine = engine
        self.index: dict[str, tuple[str, str]] = {}
        """Workspace-relative path → (mode, oid) of what the index holds under the prefix."""
        self._oids: dict[str, str] = {} if oids is None else oids
        """Retrace blob id → git blob id; a caller exporting again (the per-turn mirror) passes the
        same dict so unchanged files are not read again. Filled only for blobs git has."""
        self.files = 0

    # ------------------------------------------------------------------ start
    def start(self, base_commit: str | None) -> None:
        """Load the base commit's tree (nothing for a root commit) into the temporary index."""
        if base_commit is None:
            self.repo.run(["read-tree", "--empty"])
            return
        self.repo.run(["read-tree", base_commit])
        prefix = self.repo.prefix
        out = self.repo.run(["ls-files", "-z", "-s", "--full-name"])
        for rec in out.split("\0"):
            if not rec:
                continue
            meta, path = rec.split("\t", 1)
            mode, oid, _stage = meta.split(" ")
            if path.startswith(prefix):
                self.index[path[len(prefix) :]] = (mode, oid)

    # ------------------------------------------------------------------ moves
    def sync_to(self, cp_id: str) -> None:
        """Make the index hold checkpoint ``cp_id`` (every owned path compared)."""
        manifest = self.engine.manifest(cp_id)
        ignorer = self._ignorer(cp_id)
        gone = [p for p in self.index if p not in manifest and not ignorer.excluded_path(p, False)]
        self._apply(manifest, gone)
        self.files = len(manifest)

    def advance(self, prev_id: str, cp_id: str) -> None:
        """Move the index from checkpoint ``prev_id`` (already synced) to ``cp_id``."""
        changed = self.engine.changed_between(prev_id, cp_id)
        entries = self.engine.entries_at(cp_id, changed)
        present = {p: e for p, e in entries.items() if e is not None}
        self._apply(present, [p for p, e in entries.items() if e is None])
        self.files = len(self.engine.manifest(cp_id))

    def write_tree(self) -> str:
        return self.repo.run(["write-tree"]).strip()

    # ------------------------------------------------------------------ inside
    def _ignorer(self, cp_id: str) -> Ignorer:
        engine = self.engine

        def gitignore_at(dir_rel: str) -> bytes | None:
            rel = f"{dir_rel}/.gitignore" if dir_rel else ".gitignore"
            e = engine.entries_at(cp_id, [rel])[rel]
            return engine.content(e) if e is not None and e.kind == "file" else None

        return Ignorer(engine.workspace, engine.config, gitignore_at)

    def _under_gitlink(self, path: str) -> bool:
        parts = path.split("/")
        return any(self.index.get("/".join(parts[:i]), ("",))[0] == GITLINK for i in range(1, len(parts) + 1))

    def _apply(self, present: Mapping[str, FileEntry], gone: Iterable[str]) -> None:
        """Set ``present``, delete ``gone``: blobs first (all read before any is written)."""
        wanted: dict[str, tuple[str, str]] = {}
        missing: dict[str, bytes] = {}
        read: dict[str, str] = {}
        for path, entry in present.items():
            if self._under_gitlink(path):
                continue
            mode, oid, data = self._blob(path, entry)
            if data is not None and entry.hash is not None:
                read[entry.hash] = oid
            if self.index.get(path) != (mode, oid):
                wanted[path] = (mode, oid)
                if data is not None:
                    missing[oid] = data
        self._write_blobs(missing)
        self._oids.update(read)
        prefix = self.repo.prefix
        lines: list[bytes] = []
        for path in gone:
            if self.index.get(path, ("",))[0] == GITLINK or path not in self.index:
                continue
            lines.append(f"0 {self.repo.zero_oid}\t{prefix}{path}".encode("utf-8", "surrogateescape"))
            del self.index[path]
        for path, (mode, oid) in wanted.items():
            lines.append(f"{mode} {oid}\t{prefix}{path}".encode("utf-8", "surrogateescape"))
            self.index[path] = (mode, oid)
        if lines:
            self.repo.run(["update-index", "-z", "--index-info"], input=b"\0".join(lines) + b"\0")

    def _blob(self, path: str, entry: FileEntry) -> tuple[str, str, bytes | None]:
        """(mode, git oid, bytes when they may need writing) of one entry."""
        if entry.hash is None:
            why = entry.unstored or "its content was not stored"
            raise GitHandoffError(f"cannot export {path}: {why} (nothing was written)")
        mode = git_mode(entry)
        oid = self._oids.get(entry.hash)
        if oid is not None:
            return mode, oid, None
        data = self.engine.content(entry)
        if data is None:
            raise GitHandoffError(
                f"cannot export {path}: its content is not in the store (nothing was written)"
            )
        return mode, git_blob_id(data, self.repo.object_format), data

    def _write_blobs(self, blobs: Mapping[str, bytes]) -> None:
        if not blobs:
            return
        query = "".join(f"{oid}\n" for oid in blobs).encode()
        have = {
            line.split(" ")[0]
            for line in self.repo.run(["cat-file", "--batch-check"], input=query).splitlines()
            if not line.endswith(" missing")
        }
        todo = [(oid, data) for oid, data in blobs.items() if oid not in have]
        if not todo:
            return
        stream = bytearray()
        for _oid, data in todo:
            stream += b"blob\ndata %d\n" % len(data)
            stream += data
            stream += b"\n"
        stream += b"done\n"
        self.repo.run(["fast-import", "--quiet", "--done"], input=bytes(stream))
        check = self.repo.run(["cat-file", "--batch-check"], input=query)
        if " missing" in check:
            raise GitHandoffError("git fast-import did not store every blob")


__all__ = ["TreeBuilder", "git_blob_id", "git_mode"]
