"""Property: whatever a journal holds — valid events, forged ones (a known type with fields of
another, a sealed line with a foreign shape), unknown types, random bytes, legacy lines after
sealed ones — no journal reader crashes, and every event it yields is the model its line names,
valid by that model (its wire form reads back to the same event). The incremental reader (the
journal cursor, fed the lines one append at a time) yields exactly what a full read yields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrace.engine.store import event_log
from retrace.engine.store import journal as journal_module
from retrace.engine.store.cursor import JournalCursor
from retrace.engine.store.events import (
    EVENT_MODELS,
    KNOWN_TYPES,
    MODEL_OF,
    JournalEvent,
    MessageEvent,
    RestoreIntentEvent,
    TaskEvent,
    ToolCallResultEvent,
    TurnEvent,
    UsageEvent,
    event_json,
    parse_event,
)
from retrace.engine.store.journal import parse_line, seal_event
from retrace.engine.store.seal import seal_line

VALID: list[JournalEvent] = [
    TurnEvent(turn_id="t1", text="go"),
    MessageEvent(id="m1", parent=None, role="user", content=[{"type": "text", "text": "hi"}]),
    ToolCallResultEvent(id="c1", tool="write_file", status="ok"),
    UsageEvent(input_tokens=3, cost_usd=0.5),
    TaskEvent(task_id="k", call_id="c", status="running"),
    RestoreIntentEvent(restore_id="r", pre_head="a", target_id="b", paths=["src/a.py"]),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def forged(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event's wire form with its type, or one field, replaced."""
    wire = event_json(draw(st.sampled_from(VALID)))
    choice = draw(st.integers(0, 2))
    if choice == 0:
        wire["type"] = draw(st.sampled_from(sorted(KNOWN_TYPES)) | st.text(max_size=10))
    elif choice == 1:
        key = draw(st.sampled_from(sorted(wire)))
        wire[key] = draw(json_values)
    else:
        wire[draw(st.text(max_size=8))] = draw(json_values)
    return wire


@st.composite
def line(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 5))
    if kind == 0:  # a valid event, sealed as this version writes it
        return seal_event(event_json(draw(st.sampled_from(VALID))))
    if kind == 1:  # a forged event, sealed (the forger recomputed the checksum)
        return seal_event(draw(forged()))
    if kind == 2:  # a forged event without a checksum (a legacy-looking line)
        return json.dumps(draw(forged())).encode()
    if kind == 3:  # any JSON object
        return json.dumps(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=4))).encode()
    if kind == 4:  # a sealed line, then bytes flipped
        raw = bytearray(seal_event(event_json(draw(st.sampled_from(VALID)))))
        at = draw(st.integers(0, len(raw) - 1))
        raw[at] = draw(st.integers(0, 255).filter(lambda b: b != raw[at] and b != 0x0A))
        return bytes(raw)
    return draw(st.binary(max_size=40)).replace(b"\n", b"")


def _check(events: list[JournalEvent], lines: list[bytes]) -> None:
    claimed = []
    for raw in lines:
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            claimed.append(obj.get("type"))
    for event in events:
        assert isinstance(event, EVENT_MODELS)
        assert type(event) is MODEL_OF[event.type], "an event is the model its type names"
        assert event.type in claimed
        assert parse_event(event_json(event)) == event, "a yielded event is valid by its model"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line(), max_size=12), torn=st.binary(max_size=12))
def test_no_reader_crashes_or_yields_a_wrong_typed_event(
    tmp_path: Path, lines: list[bytes], torn: bytes
) -> None:
    journal = tmp_path / "journal.jsonl"
    body = b"".join(raw + b"\n" for raw in lines)
    tail = torn.replace(b"\n", b"")
    journal.write_bytes(body + tail)
    _check(list(event_log.read(journal, event_log.EventReport())), [*lines, tail])
    journal.write_bytes(body)
    full = list(event_log.read(journal))
    _check(full, lines)

    # The cursor, fed one line per append, yields exactly the full read's events.
    journal.write_bytes(b"")
    cursor = JournalCursor(journal)
    stepped: list[JournalEvent] = []
    for raw in lines:
        with journal.open("ab") as f:
            f.write(raw + b"\n")
        read = cursor.read()
        assert not read.restarted
        stepped.extend(read.events)
    assert stepped == full
    journal.unlink()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(line(), max_size=12),
    torn=st.binary(max_size=12),
    wanted=st.sets(st.sampled_from(sorted({type(e) for e in VALID}, key=lambda m: m.__name__)), min_size=1),
)
def test_a_read_of_some_types_yields_exactly_those_events_of_the_full_read(
    tmp_path: Path, lines: list[bytes], torn: bytes, wanted: set[type[JournalEvent]]
) -> None:
    """``only=`` lets the reader pass over lines that cannot hold a wanted event without decoding
    them; what it yields must still be exactly the full read's events of those types, in order
    (the seal rule's state carried across the lines passed over)."""
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b"".join(raw + b"\n" for raw in lines) + torn.replace(b"\n", b""))
    full = [e for e in event_log.read(journal) if type(e) in wanted]
    assert list(event_log.read(journal, only=wanted)) == full
    journal.unlink()


def test_a_read_of_some_types_decodes_only_the_lines_that_can_hold_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long session is mostly messages and tool calls; a reader of its subagents, restores or
    turns must not decode them all (a 10,000-checkpoint session took ~2 CPU-seconds per read)."""
    journal = tmp_path / "journal.jsonl"
    noise = [
        seal_event(event_json(MessageEvent(id=f"m{i}", parent=None, role="user", content=[])))
        for i in range(50)
    ]
    task = seal_event(event_json(TaskEvent(task_id="k", call_id="c", status="running")))
    journal.write_bytes(b"".join(raw + b"\n" for raw in [*noise[:20], task, *noise[20:]]))
    decoded: list[int] = []
    real = journal_module.parse_line

    def counting(number: int, raw: bytes, **kw: Any) -> Any:
        decoded.append(number)
        return real(number, raw, **kw)

    monkeypatch.setattr(journal_module, "parse_line", counting)
    events = list(event_log.read(journal, only=(TaskEvent,)))
    assert [type(e) for e in events] == [TaskEvent]
    assert decoded == [21], decoded


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "unsealed"])
def test_a_line_holding_a_non_json_number_is_damage(constant: str, sealed: bool) -> None:
    """Python's ``json`` reads ``NaN`` and ``Infinity``, which are not JSON and which no event
    this version writes holds (its serializer writes ``null``): a line holding one is refused,
    never yielded as an event that would not survive its own round trip."""
    body = '{"v":2,"ts":1.5,"type":"turn","turnId":"t1","text":"go","x":' + constant + "}"
    raw = seal_line(body.encode()) if sealed else body.encode()
    parsed = parse_line(1, raw, last=False)
    assert parsed.event is None and parsed.error is not None and "not JSON" in parsed.error, parsed
