"""The parsed-line cache (``<store>/cache/history-lines.marshal``): read, not rebuilt, on a warm
open, and never trusted — whatever happened to it or to the journals, replay with it gives
exactly what a full replay of the journals gives."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import random
import time
from pathlib import Path

import pytest
from tests.engine.test_history_index import _age, _build, _replayed

from retrace.engine import Engine, EngineConfig
from retrace.engine.history.index import HistoryIndex
from retrace.engine.history.line_cache import CTIME_RACY_NS, VERSION
from retrace.engine.store.layout import StoreLayout

MAGIC = b"retrace-history-lines\n"


def _cache(store: Path) -> Path:
    return StoreLayout(store).cache / "history-lines.marshal"


def _open(store: Path) -> tuple[dict[str, object], HistoryIndex]:
    index = HistoryIndex.load(StoreLayout(store).history_index)
    result = _replayed(store, index)
    index.save()
    return result, index


def _aged(store: Path) -> None:
    """Journals written long ago (``_age``), their ctimes (which ``utime`` set) past the racy margin."""
    _age(store)
    time.sleep(CTIME_RACY_NS / 1e9 * 1.5)


def _checkpoint_lines(store: Path) -> int:
    layout = StoreLayout(store)
    return sum(layout.journal(s).read_bytes().count(b'"type":"checkpoint"') for s in layout.session_ids())


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _build(ws, store)
    time.sleep(CTIME_RACY_NS / 1e9 * 1.5)  # journals' ctimes older than the racy margin
    return ws, store


def test_a_warm_open_reads_every_checkpoint_line_from_the_cache(built: tuple[Path, Path]) -> None:
    _, store = built
    _aged(store)
    full = _replayed(store, None)
    first, index = _open(store)
    assert first == full and index.lines is not None and index.lines.hits == 0
    assert _cache(store).exists()
    again, index = _open(store)
    assert again == full
    assert index.lines is not None and index.lines.hits == _checkpoint_lines(store)
    before = _cache(store).stat().st_mtime_ns
    _open(store)
    assert _cache(store).stat().st_mtime_ns == before  # nothing changed: not rewritten


def test_a_grown_journal_keeps_its_cached_lines_and_adds_the_new(built: tuple[Path, Path]) -> None:
    ws, store = built
    _open(store)
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        (ws / "src" / "m1.py").write_text("grown\n")
        eng.checkpoint("more", ["src/m1.py"], kind="tool", session_id="ses_2")
    result, index = _open(store)
    assert result == _replayed(store, None)
    assert index.lines is not None and index.lines.hits >= _checkpoint_lines(store) - 2


def _reseal(store: Path, key: bytes, edit: object) -> None:
    """Rewrite the cache's body with ``edit`` applied, sealed under ``key`` (a forger's guess)."""
    data = _cache(store).read_bytes()
    body = marshal.loads(data[len(MAGIC) + 32 :])
    edit(body)  # type: ignore[operator]
    raw = marshal.dumps(body)
    seal = hashlib.blake2b(f"{VERSION}\n0\n".encode() + raw, key=key, digest_size=32).digest()
    _cache(store).write_bytes(MAGIC + seal + raw)


def _relabel(body: dict[str, tuple[int, str, int, int, dict[int, tuple[object, ...]]]]) -> None:
    for journal in body.values():
        for number, entry in list(journal[4].items()):
            cp = json.loads(entry[0])  # type: ignore[arg-type]
            journal[4][number] = (json.dumps({**cp, "label": "forged"}).encode(), *entry[1:])


@pytest.mark.parametrize(
    "how", ["flipped bytes", "truncated", "forged unkeyed", "forged other key", "other store", "garbage"]
)
def test_a_damaged_or_forged_cache_is_ignored(built: tuple[Path, Path], tmp_path: Path, how: str) -> None:
    _, store = built
    _aged(store)
    full = _replayed(store, None)
    _open(store)
    path = _cache(store)
    rng = random.Random(how)
    if how == "flipped bytes":
        data = bytearray(path.read_bytes())
        for _ in range(3):
            data[rng.randrange(len(MAGIC), len(data))] ^= 0x5A
        path.write_bytes(bytes(data))
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: rng.randrange(len(path.read_bytes()))])
    elif how == "forged unkeyed":
        _reseal(store, b"", _relabel)
    elif how == "forged other key":
        _reseal(store, os.urandom(32), _relabel)
    elif how == "other store":  # a cache made by another store for journals of the same bytes
        other = tmp_path / "other-store"
        (tmp_path / "ws2").mkdir()
        _build(tmp_path / "ws2", other)
        _open(other)
        path.write_bytes(_cache(other).read_bytes())
    else:
        path.write_bytes(b"\x00" * 100)
    result, index = _open(store)
    assert result == full
    assert index.lines is not None and index.lines.hits == 0
    assert "forged" not in str(result["cps"])


def test_a_journal_rewritten_in_place_is_parsed_again(built: tuple[Path, Path]) -> None:
    """Same length, same modification time, a label changed: the index trusts the untouched
    journal's spans, but its ctime moved, so the cache does not stand for its lines."""
    _, store = built
    _aged(store)
    _open(store)
    assert _open(store)[1].lines.hits == _checkpoint_lines(store)  # type: ignore[union-attr]
    layout = StoreLayout(store)
    path = layout.journal("ses_1")
    data = path.read_bytes()
    edited = data.replace(b'"label":"edit src/m1.py"', b'"label":"edit src/m9.py"', 1)
    assert edited != data and len(edited) == len(data)
    st = path.stat()
    with path.open("r+b") as f:
        f.write(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    full = _replayed(store, None)
    result, index = _open(store)
    assert result == full  # the edited line fails its checksum: damage, as in a full replay
    assert index.trusted == len(layout.session_ids())  # the index alone did trust it
    assert index.lines is not None and index.lines.hits < _checkpoint_lines(store)


def test_the_engine_writes_it_and_a_reader_does_not(built: tuple[Path, Path]) -> None:
    ws, store = built
    with Engine.open(ws, store, readonly=True):
        pass
    assert not _cache(store).exists()
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        ids = [c.id for c in eng.timeline()]
    assert _cache(store).exists()
    with Engine.open(ws, store, readonly=True) as ro:
        assert [c.id for c in ro.timeline()] == ids


def test_observe_all_is_observe_of_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-pass clock floor a warm open takes from its local ids equals observing each
    (seen through the next id made with the clock at its epoch: it comes right after the floor)."""
    from retrace.engine import ids as ids_module
    from retrace.engine.ids import ALPHABET, IdGenerator, decode_time

    monkeypatch.setattr(ids_module, "now_us", lambda: 0)

    rng = random.Random(7)
    for _ in range(200):
        ids = ["".join(rng.choice(ALPHABET) for _ in range(12)) for _ in range(rng.randint(0, 30))]
        ids += rng.choice([[], ["not-an-id"], ["ZZZZZZZZZZZZ"], ["zzzzzzzzzz"]])
        one, each = IdGenerator(), IdGenerator()
        one.observe_all(ids)
        for cid in ids:
            each.observe(cid)
        assert decode_time(one.new()) == decode_time(each.new())


def test_a_line_naming_a_non_utf8_file_is_parsed_from_its_journal(tmp_path: Path) -> None:
    """Its checkpoint has no JSON text of its own (a lone surrogate): it is not cached, the
    other lines are, and replay stays the full replay's."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _build(ws, store, sessions=1, calls=3)
    odd = os.fsdecode(b"caf\xe9.txt")
    (ws / odd).write_bytes(b"x\n")
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        eng.checkpoint("odd name", [odd], kind="tool")
    _aged(store)
    full = _replayed(store, None)
    _open(store)
    result, index = _open(store)
    assert result == full
    assert index.lines is not None and index.lines.hits == _checkpoint_lines(store) - 1
