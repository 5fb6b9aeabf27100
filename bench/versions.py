"""Released versions of real projects, as trees on disk, for the real-code replay.

``fetch(package, count, cache)`` asks PyPI's JSON API (``https://pypi.org/pypi/<pkg>/json``) for
the package's final releases (``1.2.3``: pre-releases and dev releases are skipped), keeps the
last ``count`` in version order that have a source distribution, downloads each sdist once into
``cache/<package>/dist/`` and extracts it to ``cache/<package>/v/<version>/`` without its
top-level folder (tar ``data`` filter: no absolute paths, no links out of the tree). Git's own
files (``.gitignore``, ``.gitattributes``) are dropped so every strategy tracks the same files.
``versions(cache, package)`` lists what is on disk, so a local tree of ``v/<version>/`` folders
(the smoke test's) replays without any network.
``sync(workspace, tree)`` makes ``workspace`` equal ``tree`` the way a checkout would: writes
only the files whose bytes or exec bit differ (fresh mtimes), deletes the files that are gone
(and directories left empty), and returns the changed paths.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import urljoin

_FINAL = re.compile(r"^\d+(\.\d+)*$")
DROPPED = frozenset({".gitignore", ".gitattributes"})


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def versions(cache: Path, package: str) -> list[str]:
    """The extracted versions of ``package`` under ``cache``, in version order."""
    root = cache / package / "v"
    found = [p.name for p in root.iterdir() if p.is_dir() and _FINAL.match(p.name)] if root.is_dir() else []
    return sorted(found, key=_key)


def _sdists(package: str) -> list[tuple[str, str, str]]:
    """(version, filename, url) of every final release with an sdist, in version order."""
    api = f"https://pypi.org/pypi/{package}/json"
    with urllib.request.urlopen(api, timeout=60) as resp:
        meta = json.load(resp)
    out = []
    for version, files in meta["releases"].items():
        if not _FINAL.match(version):
            continue
        sdist = next((f for f in files if f["packagetype"] == "sdist" and not f.get("yanked")), None)
        if sdist is not None:
            out.append((version, sdist["filename"], urljoin(api, sdist["url"])))
    return sorted(out, key=lambda t: _key(t[0]))


def _extract(archive: Path, dest: Path) -> None:
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp)
    else:
        with tarfile.open(archive) as t:
            t.extractall(tmp, filter="data")
    tops = list(tmp.iterdir())
    top = tops[0] if len(tops) == 1 and tops[0].is_dir() else tmp
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            if name in DROPPED:
                os.unlink(os.path.join(dirpath, name))
    os.replace(top, dest)
    shutil.rmtree(tmp, ignore_errors=True)


def fetch(package: str, count: int, cache: Path, log: bool = True) -> list[str]:
    """Download and extract the last ``count`` final sdists of ``package``; their versions."""
    picked = _sdists(package)[-count:]
    for version, filename, url in picked:
        dest = cache / package / "v" / version
        if dest.is_dir():
            continue
        archive = cache / package / "dist" / filename
        if not archive.exists():
            if log:
                print(f"[replay] downloading {filename}", flush=True)
            archive.parent.mkdir(parents=True, exist_ok=True)
            part = archive.with_name(filename + ".part")
            with urllib.request.urlopen(url, timeout=300) as resp, open(part, "wb") as out:
                shutil.copyfileobj(resp, out)
            os.replace(part, archive)
        _extract(archive, dest)
    return [v for v, _f, _u in picked]


def _files(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath, name)
            out[full.relative_to(root).as_posix()] = full
    return out


def _same(a: Path, b: Path) -> bool:
    sa, sb = a.lstat(), b.lstat()
    if sa.st_size != sb.st_size or (sa.st_mode & 0o111 != 0) != (sb.st_mode & 0o111 != 0):
        return False
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return a.read_bytes() == b.read_bytes()


def sync(workspace: Path, tree: Path) -> list[str]:
    """Make ``workspace`` equal ``tree``; returns the workspace-relative paths written or deleted."""
    have, want = _files(workspace), _files(tree)
    changed: list[str] = []
    for rel, src in want.items():
        dst = workspace / rel
        if rel in have and _same(src, dst):
            continue
        changed.append(rel)
        if dst.is_symlink() or (rel in have and src.is_symlink()):
            dst.unlink()
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
            continue
        dst.write_bytes(src.read_bytes())
        dst.chmod(0o755 if src.lstat().st_mode & 0o111 else 0o644)
    for rel in have.keys() - want.keys():
        changed.append(rel)
        (workspace / rel).unlink()
    for dirpath, _dirs, _names in os.walk(workspace, topdown=False):
        if Path(dirpath) != workspace and not os.listdir(dirpath):
            os.rmdir(dirpath)
    return sorted(changed)
