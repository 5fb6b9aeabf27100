"""Ignore rules, the stat walk and the stat cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tests.engine.conftest import write

from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.scan import read_entry, walk
from retrace.engine.capture.statcache import StatCache
from retrace.engine.config import EngineConfig
from retrace.engine.manifest import make_entry


def test_nested_gitignore_negation_and_precedence(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\nbuild/\n")
    write(tmp_path, "pkg/.gitignore", "!important.log\nlocal/\n")
    ig = Ignorer(tmp_path, EngineConfig())
    assert ig.excluded("x.log", False)
    assert ig.excluded("pkg/x.log", False)
    assert not ig.excluded("pkg/important.log", False)
    assert ig.excluded("important.log", False)
    assert ig.excluded("pkg/local", True) and not ig.excluded("local", True)
    assert ig.excluded("build", True) and not ig.excluded("build", False)
    assert ig.excluded(".git", True) and ig.excluded("sub/.git", True)
    assert ig.excluded_path("build/out/a.txt", False)


def test_gitignore_off_and_builtins_win(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.txt\n!node_modules/\n")
    write(tmp_path, "package.json", "{}")  # marks node_modules/ as npm's
    ig = Ignorer(tmp_path, EngineConfig(use_gitignore=False))
    assert not ig.excluded("a.txt", False)
    assert ig.excluded("node_modules", True)
    ig2 = Ignorer(tmp_path, EngineConfig())
    assert ig2.excluded("a.txt", False) and ig2.excluded("node_modules", True)


def test_walk_never_follows_symlinks(tmp_path: Path) -> None:
    write(tmp_path, "real/a.txt", "a")
    os.symlink(tmp_path / "real", tmp_path / "linkdir")
    os.symlink("/etc/passwd", tmp_path / "pw")
    os.mkfifo(tmp_path / "fifo")
    got = {rel: st for rel, st in walk(tmp_path, Ignorer(tmp_path, EngineConfig()))}
    assert sorted(got) == ["linkdir", "pw", "real/a.txt"]
    r = read_entry(str(tmp_path / "pw"), got["pw"], 100)
    assert r is not None and r.entry.kind == "symlink" and r.entry.target == "/etc/passwd"


def test_read_entry_size_cap_and_exec(tmp_path: Path) -> None:
    write(tmp_path, "big", b"x" * 101)
    write(tmp_path, "run", "#!/bin/sh\n", executable=True)
    big = read_entry(str(tmp_path / "big"), os.lstat(tmp_path / "big"), 100)
    assert big is not None and big.entry.hash is None and big.data is None
    assert big.entry.unstored is not None and "over size cap" in big.entry.unstored
    run = read_entry(str(tmp_path / "run"), os.lstat(tmp_path / "run"), 100)
    assert run is not None and run.entry.executable and run.data == b"#!/bin/sh\n"


def test_stat_cache_racy_entries_are_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "f", "1")
    cache = StatCache(tmp_path / "cache.bin")
    st = os.lstat(tmp_path / "f")
    e = make_entry("file", "h", 1)
    cache.put("f", st, e)
    assert cache.lookup("f", st) is None, "mtime within 2 s of caching: racily clean"
    old = time.time() - 60
    os.utime(tmp_path / "f", (old, old))
    st = os.lstat(tmp_path / "f")
    cache.put("f", st, e)
    assert cache.lookup("f", st) is None, "an old mtime but a fresh ctime is still racily clean"
    # Recorded 3 s later (the clock moved on): both timestamps are now safely in the past.
    later = time.time_ns() + 3_000_000_000
    monkeypatch.setattr("retrace.engine.capture.statcache.time.time_ns", lambda: later)
    cache.put("f", st, e)
    assert cache.lookup("f", st) == ("file", "h", 1, False, None, None)
    cache.save()
    again = StatCache(tmp_path / "cache.bin")
    again.load()
    assert again.lookup("f", st) == ("file", "h", 1, False, None, None)
    write(tmp_path, "f", "2")
    assert again.lookup("f", os.lstat(tmp_path / "f")) is None
    (tmp_path / "cache.bin").write_text("{broken")
    broken = StatCache(tmp_path / "cache.bin")
    broken.load()
    assert broken.lookup("f", st) is None


def test_fast_paths_agree_with_pathspec(tmp_path: Path) -> None:
    """Plain names and "*.ext" suffixes skip pathspec; their verdicts must be pathspec's."""
    import pathspec

    from retrace.engine.capture.ignore import _Rules

    lines = ["*.log", "build", "dist/", "*.egg-info/", "*.o"]
    fast = _Rules(lines)
    assert fast.spec is None, "every pattern here takes a fast path"
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    names = ["a.log", "x.log.txt", "build", "dist", "pkg.egg-info", "main.o", "o", "log", ".log"]
    for name in names:
        for rel in (name, f"sub/dir/{name}"):
            for is_dir in (False, True):
                want = spec.check_file(rel + "/" if is_dir else rel).include
                assert fast.check(rel, name, is_dir) == (True if want else None), (rel, is_dir)


def test_walk_name_filters_agree_with_excluded(tmp_path: Path) -> None:
    # The walk decides by per-directory name tests where the rules allow it and falls back to
    # excluded() where a path pattern or negation applies: both must give the same tree.
    write(tmp_path, ".gitignore", "*.log\nbuild/\ncache\n")
    write(tmp_path, "neg/.gitignore", "!keep.log\n")
    write(tmp_path, "anch/.gitignore", "/top.txt\nsub/deep/\n")
    names = ["a.txt", "b.log", "keep.log", "top.txt", ".DS_Store", ".git", "x.logx"]
    for d in ["", "neg", "neg/inner", "anch", "anch/sub", "anch/sub/deep", "plain", "build", "cache"]:
        for n in names:
            write(tmp_path, f"{d}/{n}" if d else n, "x")
    os.makedirs(tmp_path / "plain" / "build" / "q")
    write(tmp_path, "plain/build/q/f.txt", "x")
    write(tmp_path, "plain/cache.d/f.txt", "x")
    ig = Ignorer(tmp_path, EngineConfig(excludes=["*.tmp", "gen/"]))
    write(tmp_path, "plain/z.tmp", "x")
    write(tmp_path, "gen/f.txt", "x")
    got = sorted(rel for rel, _st in walk(tmp_path, ig))
    expected = sorted(
        rel
        for rel in (
            str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file() or p.is_symlink()
        )
        if not Ignorer(tmp_path, EngineConfig(excludes=["*.tmp", "gen/"])).excluded_path(rel, False)
    )
    assert got == expected
    assert "neg/keep.log" in got and "neg/inner/keep.log" in got and "b.log" not in got
    assert "anch/top.txt" not in got and "anch/sub/top.txt" in got and "anch/sub/deep/a.txt" not in got
    assert "plain/cache.d/f.txt" in got and "plain/z.tmp" not in got
    assert not any(g.rsplit("/", 1)[-1] == ".git" for g in got)
    assert ig.name_filter("") is not None and ig.name_filter("neg") is None and ig.name_filter("anch") is None


def test_set_excludes_replaces_the_users_rules_and_every_cached_answer(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n")
    ig = Ignorer(tmp_path, EngineConfig(excludes=["gen/"]))
    assert ig.excluded_path("gen/a/b.txt", False) and not ig.excluded_path("out/x.txt", False)
    ig.set_excludes(["out/", "*.tmp"])
    assert not ig.excluded_path("gen/a/b.txt", False)  # the cached ancestor verdict is gone
    assert ig.excluded_path("out/x.txt", False) and ig.excluded("a.tmp", False)
    assert ig.excluded("x.log", False) and ig.excluded(".git", True)  # .gitignore and builtins stay
    ig.set_excludes([])
    assert not ig.excluded_path("out/x.txt", False) and ig.excluded(".git", True)
