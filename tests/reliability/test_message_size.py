"""One JSON-RPC message's size is capped at the transport, against the real server process: a
96 MiB request is answered with a clear Invalid Request error naming the limit, its body is
skipped without being buffered (the server's peak RSS grows by a bounded few tens of MiB,
whatever the number of such messages; it used to grow by about 8x each message), and the server
keeps answering. A notification, or a request whose id comes after its big ``params``, is
skipped the same way, with no answer to send."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.reliability.conftest import record_figures
from tests.reliability.inputs_support import RawServer

from retrace.lsp.transport import MAX_MESSAGE_BYTES, top_level_id

INVALID_REQUEST = -32600
BIG = 96 << 20


def peak_rss(pid: int) -> int:
    """The process's peak resident set (``VmHWM``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def body(size: int, *, request_id: int | None, id_first: bool = True) -> bytes:
    pad = "x" * (size - 120)
    head = {"jsonrpc": "2.0", "method": "retrace/checkpoint/get"}
    if request_id is not None and id_first:
        head["id"] = request_id  # type: ignore[assignment]
    text = json.dumps({**head, "params": {"id": pad}})
    if request_id is not None and not id_first:
        text = text[:-1] + f', "id": {request_id}}}'
    return text.encode()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_an_oversized_request_is_refused_unread_and_the_server_stays_up(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    srv = RawServer(ws, tmp_path / "store", env={"RETRACE_FAKE_MODEL": ""}, log_path=tmp_path / "server.log")
    try:
        assert "result" in srv.initialize()
        assert "result" in srv.request("retrace/session/list", {})
        before = peak_rss(srv.proc.pid)
        answer = srv.request_raw_id(body(BIG, request_id=9001).decode(), 9001, timeout=120)  # type: ignore[arg-type]
        error = answer["error"]
        assert error["code"] == INVALID_REQUEST
        assert (
            f"a message of {len(body(BIG, request_id=9001))} bytes is over the {MAX_MESSAGE_BYTES}"
            in error["message"]
        )
        srv.send_raw(body(BIG, request_id=None))  # a notification: nothing to answer
        srv.send_raw(body(BIG, request_id=9002, id_first=False))  # the id is past what is read
        assert "result" in srv.request("retrace/session/list", {}, timeout=120)
        growth = peak_rss(srv.proc.pid) - before
        assert srv.alive() and growth < 64 << 20, growth  # was 811 MiB after the first one
        assert not any(o.get("id") == 9002 for o in srv.orphans)
        record_figures(
            "message-size",
            "ci",
            {"message_bytes": BIG, "limit_bytes": MAX_MESSAGE_BYTES, "server_peak_rss_growth_bytes": growth},
        )
    finally:
        srv.close()


@given(
    ident=st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=40)),
    params=st.recursive(
        st.none() | st.integers() | st.text(max_size=5),
        lambda c: st.dictionaries(st.text(max_size=4), c, max_size=3),
    ),
    first=st.booleans(),
)
def test_the_id_found_is_the_top_level_one(ident: int | str, params: object, first: bool) -> None:
    decoy = {"id": "decoy", "nested": [{"id": 1}], "params": params}
    msg = (
        {"id": ident, "method": "m", "params": decoy}
        if first
        else {"method": "m", "params": decoy, "id": ident}
    )
    text = json.dumps(msg).encode()
    assert top_level_id(text) == ident
    assert top_level_id(text[: len(text) // 2]) in (ident, None)  # cut short: the id or nothing
