"""ISSUE25 item 13: a file whose name is not valid UTF-8 must round-trip through the journal.

Such a name reaches Python as a ``str`` with lone surrogates (``surrogateescape``). The
journal's delta is a map keyed by path; if any layer turns the key into replacement
characters, the next process replays a different name, sees the real file as "new" and the
recorded one as "deleted", and reports the agent's own file as changed outside the agent: a
restore of an earlier checkpoint then needs ``--force``.

Tested through the real CLI (one process per command: every command replays the journal) and,
for the class, a property over random byte names through the engine (checkpoint, re-open,
nothing unrecorded; restore an earlier checkpoint without force).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reliability.cli_support import initialised_cli

from retrace.engine import Engine, EngineConfig
from retrace.engine.manifest import delta_to_json, make_entry
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import CheckpointEvent, ParentCopy, event_json

BAD_NAMES = (b"caf\xe9.txt", b"\xff\xfe", b"ok-\xc3(.md", b"\xed\xa0\x80x")


def _ls(root: Path) -> set[bytes]:
    return set(os.listdir(os.fsencode(root)))


def test_non_utf8_names_restore_an_earlier_checkpoint_without_force(tmp_path: Path) -> None:
    cli = initialised_cli(tmp_path)
    ws = os.fsencode(cli.workspace)
    (cli.workspace / "a.txt").write_bytes(b"one\n")
    first = cli.checkpoint("first")
    for i, name in enumerate(BAD_NAMES):
        with open(os.path.join(ws, name), "wb") as f:
            f.write(b"content %d\n" % i)
    (cli.workspace / "a.txt").write_bytes(b"two\n")
    cli.checkpoint("with odd names")
    # A second process sees nothing changed outside the agent: the names replay exactly.
    shown = cli.ok("diff", "head", "--json").payload()
    assert not shown, f"phantom changes after a checkpoint: {shown}"
    assert [c["kind"] for c in cli.log()][-1] == "manual", "a catch-up capture saw phantom changes"
    result, payload = cli.restore(first)
    assert result.code == 0, f"restore without --force refused: {result.brief()} {payload}"
    assert _ls(cli.workspace) & set(BAD_NAMES) == set()
    assert (cli.workspace / "a.txt").read_bytes() == b"one\n"


def test_checkpoint_event_keeps_surrogate_path_keys() -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    entry = make_entry("file", "0" * 64, 1)
    cp = Checkpoint.model_validate(
        {"id": "c1", "parent": "c0", "sessionId": "s", "kind": "manual", "createdAt": "2026-01-01T00:00:00Z"}
    )
    event = CheckpointEvent(
        checkpoint=cp,
        delta=delta_to_json({name: entry, "b": None}),
        snapshot=None,
        parent_delta=ParentCopy(id="c0", parent=None, delta=delta_to_json({name: None})),
    )
    line = json.dumps(event_json(event), ensure_ascii=True)
    back = json.loads(line)
    assert set(back["delta"]) == {name, "b"}
    assert set(back["parentDelta"]["delta"]) == {name}


_names = st.binary(min_size=1, max_size=24).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..") and b != b".git"
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(_names, min_size=1, max_size=4))
def test_any_byte_name_round_trips_through_the_journal(tmp_path_factory: object, names: set[bytes]) -> None:
    base = tmp_path_factory.mktemp("names")  # type: ignore[attr-defined]
    ws, store = base / "ws", base / "store"
    ws.mkdir()
    (ws / "keep.txt").write_bytes(b"k\n")
    cfg = EngineConfig(watcher=False)
    with Engine.open(ws, store, config=cfg) as eng:
        first = eng.checkpoint("first").id
        for i, name in enumerate(sorted(names)):
            with open(os.path.join(os.fsencode(ws), name), "wb") as f:
                f.write(b"v%d\n" % i)
        made = eng.checkpoint("names", kind="tool").id
    with Engine.open(ws, store, config=cfg) as eng:
        # Opening catches up with changes made while closed: there must be none.
        assert eng.head.id == made, "the journal replayed other names than those on disk"
        assert eng.unrecorded_changes() == {}
        out = eng.restore(first)
        assert out.kind == "applied", f"restore without force: {out.kind}"
    assert _ls(ws) == {b"keep.txt"}
