"""The compact stat cache: racily-clean verdicts, full stat identity, and that any damaged or
foreign cache file (or row) falls back to re-hashing instead of vouching."""

from __future__ import annotations

import marshal
import os
import time
from pathlib import Path

import pytest
from tests.engine.conftest import write

from retrace.engine import Engine
from retrace.engine.capture.statcache import CTIME_RACY_NS, RACY_NS, StatCache, racily_clean, stat_key
from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry

HOUR_NS = 3600 * 10**9


def _st(
    *, size: int = 1, mtime: int = 0, ctime: int = 0, ino: int = 7, dev: int = 3, mode: int = 0o100644
) -> os.stat_result:
    """A synthetic lstat: (mode, ino, dev, nlink, uid, gid, size, atime, mtime, ctime) plus the
    float and nanosecond fields os.stat_result takes as extra sequence items."""
    return os.stat_result(
        (
            mode,
            ino,
            dev,
            1,
            0,
            0,
            size,
            0,
            mtime // 10**9,
            ctime // 10**9,
            0.0,
            mtime / 1e9,
            ctime / 1e9,
            0,
            mtime,
            ctime,
        )
    )


@pytest.mark.parametrize(
    ("mtime_age", "ctime_age", "racy"),
    [
        (RACY_NS, CTIME_RACY_NS, False),
        (RACY_NS - 1, HOUR_NS, True),
        (HOUR_NS, CTIME_RACY_NS - 1, True),
        (HOUR_NS, HOUR_NS, False),
        (0, 0, True),
        (-HOUR_NS, HOUR_NS, True),  # mtime in the future of the recording
    ],
)
def test_racily_clean_table(mtime_age: int, ctime_age: int, racy: bool) -> None:
    now = 10 * HOUR_NS
    assert racily_clean(_st(mtime=now - mtime_age, ctime=now - ctime_age), now) is racy


def test_every_stat_field_is_part_of_the_identity() -> None:
    base = dict(size=1, mtime=HOUR_NS, ctime=HOUR_NS, ino=7, dev=3, mode=0o100644)
    key = stat_key(_st(**base))
    assert key is not None
    for field, other in [
        ("size", 2),
        ("mtime", HOUR_NS + 1),
        ("ctime", HOUR_NS + 1),
        ("ino", 8),
        ("dev", 4),
        ("mode", 0o100755),
    ]:
        assert stat_key(_st(**{**base, field: other})) != key, field


def test_a_stat_that_does_not_fit_never_vouches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    st = _st(ino=2**70, mtime=HOUR_NS, ctime=HOUR_NS)
    assert stat_key(st) is None
    cache = StatCache(tmp_path / "c")
    monkeypatch.setattr("retrace.engine.capture.statcache.time.time_ns", lambda: 10 * HOUR_NS)
    e = make_entry("file", "h", 1)
    cache.put("f", st, e)
    assert cache.lookup("f", st) is None
    assert not cache.vouches("f", st, e)


def _settled(
    cache: StatCache, monkeypatch: pytest.MonkeyPatch, rel: str, st: os.stat_result, e: FileEntry
) -> None:
    later = max(st.st_mtime_ns, st.st_ctime_ns) + HOUR_NS
    monkeypatch.setattr("retrace.engine.capture.statcache.time.time_ns", lambda: later)
    cache.put(rel, st, e)
    monkeypatch.undo()


@pytest.mark.parametrize(
    "head",
    [
        make_entry("file", "other", 1),
        make_entry("symlink", "h", 1, target="x"),
        make_entry("file", "h", 2),
        make_entry("file", "h", 1, executable=True),
        None,
    ],
)
def test_vouches_only_for_the_same_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: FileEntry | None
) -> None:
    cache = StatCache(tmp_path / "c")
    st = _st(mtime=HOUR_NS, ctime=HOUR_NS)
    e = make_entry("file", "h", 1)
    _settled(cache, monkeypatch, "f", st, e)
    assert cache.vouches("f", st, e)
    assert not cache.vouches("f", st, head)


def test_a_racy_row_stays_untrusted_after_a_reload(tmp_path: Path) -> None:
    """The racily-clean verdict is taken when the row is recorded and persisted with it: the
    same row read back hours later still does not vouch."""
    write(tmp_path, "f", "1")
    st = os.lstat(tmp_path / "f")
    cache = StatCache(tmp_path / "c")
    cache.put("f", st, make_entry("file", "h", 1))
    cache.save()
    again = StatCache(tmp_path / "c")
    again.load()
    assert len(again) == 1
    assert again.lookup("f", st) is None and not again.vouches("f", st, make_entry("file", "h", 1))


@pytest.mark.parametrize(
    "content",
    [
        b"{broken",
        b"",
        marshal.dumps(
            {"version": 4, "entries": {"f": [1, 2, 3, 4, 5, 6, 7, "file", "h", 1, False, None, None]}}
        ),
        marshal.dumps({"version": 5, "entries": {"f": [1, 2, 3]}}),
        marshal.dumps({"version": 5, "entries": ["f"]}),
        marshal.dumps({"version": 5, "entries": {"f": ("key", "file", "h", 1, False, None, None)}}),
        marshal.dumps([1, 2, 3]),
    ],
)
def test_a_foreign_or_damaged_file_loads_as_empty(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "c").write_bytes(content)
    cache = StatCache(tmp_path / "c")
    cache.load()
    assert len(cache) == 0


def test_a_malformed_row_past_the_sample_is_a_miss(tmp_path: Path) -> None:
    st = _st(mtime=HOUR_NS, ctime=HOUR_NS)
    key = stat_key(st)
    good = {f"g{i}": (key, "file", "h", 1, False, None, None) for i in range(10)}
    (tmp_path / "c").write_bytes(marshal.dumps({"version": 5, "entries": {**good, "bad": (key,)}}))
    cache = StatCache(tmp_path / "c")
    cache.load()
    e = make_entry("file", "h", 1)
    assert cache.vouches("g0", st, e)
    assert cache.lookup("bad", st) is None and not cache.vouches("bad", st, e)


def _age(ws: Path) -> None:
    old = time.time_ns() - HOUR_NS
    for dirpath, _dirs, files in os.walk(ws):
        for name in files:
            os.utime(os.path.join(dirpath, name), ns=(old, old))


def test_warm_open_catches_a_size_and_mtime_preserving_write_with_every_cache_state(
    ws: Path, store: Path
) -> None:
    """A write that keeps size and mtime while no engine runs is found on the next open
    whatever the stat cache holds: current rows (ctime moved), a cache of the previous
    format, or a damaged file (both re-hash everything)."""
    for i in range(40):
        write(ws, f"d{i % 4}/f{i}.txt", f"value {i:04d}\n")
    _age(ws)
    time.sleep(0.15)  # past the ctime margin: the rows recorded now vouch
    Engine.open(ws, store).close()
    cache_file = store / "cache" / "stat-cache.marshal"
    for n, damage in enumerate([None, b"{broken", marshal.dumps({"version": 4, "entries": {}})]):
        f = ws / "d1" / "f5.txt"
        before = os.lstat(f)
        time.sleep(0.011)
        f.write_bytes(f"value {9000 + n:04d}\n".encode())
        os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
        if damage is not None:
            cache_file.write_bytes(damage)
        eng = Engine.open(ws, store)
        try:
            head = eng.head
            assert head.kind == "external", damage
            assert [(c.path, c.status) for c in head.files] == [("d1/f5.txt", "modified")], damage
        finally:
            eng.close()


def test_warm_open_sees_a_delete_and_an_add_that_keep_the_file_count(ws: Path, store: Path) -> None:
    """The walk skips the deletion pass when it met every head path; one file gone and one new
    keep the count of walked files equal to the head's, and both must still be recorded."""
    for i in range(10):
        write(ws, f"f{i}.txt", str(i))
    Engine.open(ws, store).close()
    os.remove(ws / "f3.txt")
    write(ws, "new.txt", "new")
    eng = Engine.open(ws, store)
    try:
        assert {(c.path, c.status) for c in eng.head.files} == {("f3.txt", "deleted"), ("new.txt", "added")}
    finally:
        eng.close()
