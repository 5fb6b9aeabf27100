"""The relay's listener and client in one process, with a stand-in method table: framing, the
size cap, validation, stale sockets, directory and peer checks, concurrency. The real server
and the real CLI are in ``test_relay_cli.py``."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrace.relay import wire
from retrace.relay.client import RelayRefusedError, forward
from retrace.relay.server import MethodError, RelayServer, Request


def _echo(request: Request) -> dict[str, Any]:
    if "fail" in request.params:
        raise MethodError(wire.FAILED, f"failed: {request.params['fail']}")
    return {"echo": request.params}


class Calls:
    """A method that records its calls, serially checked: two at once is a failure."""

    def __init__(self) -> None:
        self.running = 0
        self.overlaps = 0
        self.seen: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> dict[str, Any]:
        with self.lock:
            self.running += 1
            self.overlaps += self.running > 1
        time.sleep(0.002)
        with self.lock:
            self.seen.append(int(request.params["n"]))
            self.running -= 1
        return {"n": request.params["n"]}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


@pytest.fixture
def relay(relay_dir: Path, store: Path) -> Iterator[RelayServer]:
    server = RelayServer(store, {"echo": _echo})
    server.start()
    yield server
    server.close()


def raw_call(path: Path, payload: bytes) -> dict[str, Any]:
    """Send raw bytes (maybe not a request at all) and read the one-line answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(path))
        sender = threading.Thread(target=_send_quietly, args=(conn, payload))
        sender.start()
        answer = json.loads(wire.read_line(conn))
        sender.join()
    assert isinstance(answer, dict)
    return answer


def _send_quietly(conn: socket.socket, payload: bytes) -> None:
    try:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the server answered and closed before reading it all (the size cap)


def request_line(store: Path, method: str = "echo", params: Any = None, **extra: Any) -> bytes:
    body = {"v": wire.PROTOCOL, "method": method, "store": str(store), "params": params or {}, **extra}
    return wire.encode(body)


def test_a_call_round_trips_with_any_alias_of_the_store(
    relay: RelayServer, store: Path, tmp_path: Path
) -> None:
    assert forward(store, "echo", {"x": "ü\n"}) == {"echo": {"x": "ü\n"}}
    alias = tmp_path / "alias"
    alias.symlink_to(store)
    assert forward(alias, "echo", {"y": 1}) == {"echo": {"y": 1}}


def test_owner_only_permissions(relay: RelayServer, relay_dir: Path) -> None:
    assert stat.S_IMODE(os.lstat(relay_dir).st_mode) == 0o700
    st_sock = os.lstat(relay.path)
    assert stat.S_ISSOCK(st_sock.st_mode)
    assert stat.S_IMODE(st_sock.st_mode) == 0o600
    assert st_sock.st_uid == os.geteuid()


def test_no_server_is_none(relay_dir: Path, store: Path) -> None:
    assert forward(store, "echo", {}) is None  # no directory
    relay_dir.mkdir(mode=0o700)
    assert forward(store, "echo", {}) is None  # no socket


def _stale_socket(path: Path) -> None:
    """What a killed server leaves: a bound socket file nobody listens on."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()


def test_a_stale_socket_is_none_and_replaced_by_the_next_server(relay_dir: Path, store: Path) -> None:
    path = wire.socket_path(store)
    _stale_socket(path)
    assert path.exists()
    assert forward(store, "echo", {}) is None
    server = RelayServer(store, {"echo": _echo})
    server.start()
    try:
        assert forward(store, "echo", {"a": 1}) == {"echo": {"a": 1}}
    finally:
        server.close()
    assert not path.exists()  # closed: its socket is gone


def test_a_live_socket_of_someone_else_is_never_taken_over(relay: RelayServer, store: Path) -> None:
    second = RelayServer(store, {"echo": _echo})
    with pytest.raises(wire.RelayUnavailableError, match="another live process"):
        second.start()
    assert forward(store, "echo", {"still": True}) == {"echo": {"still": True}}


def test_closing_leaves_a_socket_that_is_not_ours(relay_dir: Path, store: Path) -> None:
    server = RelayServer(store, {"echo": _echo})
    server.start()
    server.path.unlink()
    _stale_socket(server.path)  # someone else's file at the path now
    server.close()
    assert server.path.exists()


@pytest.mark.parametrize("mode", [0o755, 0o770, 0o701])
def test_a_directory_open_to_others_disables_both_ends(relay_dir: Path, store: Path, mode: int) -> None:
    relay_dir.mkdir()
    relay_dir.chmod(mode)
    with pytest.raises(wire.RelayUnavailableError, match="open to others"):
        RelayServer(store, {"echo": _echo}).start()
    relay_dir.chmod(0o700)
    server = RelayServer(store, {"echo": _echo})
    server.start()
    try:
        relay_dir.chmod(mode)  # loosened while it listens: the client no longer trusts it
        assert forward(store, "echo", {}) is None
    finally:
        relay_dir.chmod(0o700)
        server.close()


def test_a_symlinked_directory_is_refused(relay_dir: Path, store: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    relay_dir.symlink_to(real)
    with pytest.raises(wire.RelayUnavailableError, match="not a directory"):
        RelayServer(store, {"echo": _echo}).start()
    assert forward(store, "echo", {}) is None


def test_a_long_store_path_keeps_a_short_socket_path(relay_dir: Path, tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 12)
    deep.mkdir(parents=True)
    path = wire.socket_path(deep)
    assert len(os.fsencode(str(path))) < wire.SUN_PATH_MAX
    server = RelayServer(deep, {"echo": _echo})
    server.start()
    try:
        assert forward(deep, "echo", {"deep": True}) == {"echo": {"deep": True}}
    finally:
        server.close()


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"not json\n", wire.INVALID_REQUEST),
        (b"[1, 2]\n", wire.INVALID_REQUEST),
        (b'{"v": 99, "method": "echo", "store": "/x"}\n', wire.INVALID_REQUEST),
        (b'{"v": 1, "store": "/x"}\n', wire.INVALID_REQUEST),
        (b'{"v": 1, "method": "echo"}\n', wire.INVALID_REQUEST),
        (b'{"v": 1, "method": "echo", "store": "/x", "params": [1]}\n', wire.INVALID_PARAMS),
        (b'{"v": 1, "method": "echo", "store": "/x", "workspace": 3}\n', wire.INVALID_REQUEST),
        (b'{"v": 1, "method": "echo"', wire.INVALID_REQUEST),  # cut off: the peer closed first
        (b"\xff\xfe\n", wire.INVALID_REQUEST),
    ],
)
def test_malformed_requests_get_an_error_and_the_server_keeps_serving(
    relay: RelayServer, store: Path, payload: bytes, code: str
) -> None:
    answer = raw_call(relay.path, payload)
    assert answer["ok"] is False
    assert answer["code"] == code
    assert answer["error"]
    assert forward(store, "echo", {"after": 1}) == {"echo": {"after": 1}}


def test_unknown_method_and_method_failure_are_refusals_with_the_message(
    relay: RelayServer, store: Path
) -> None:
    with pytest.raises(RelayRefusedError, match=r"unknown method .nope. \(known: echo\)") as info:
        forward(store, "nope", {})
    assert info.value.code == wire.UNKNOWN_METHOD
    with pytest.raises(RelayRefusedError, match="failed: disk full") as info:
        forward(store, "echo", {"fail": "disk full"})
    assert info.value.code == wire.FAILED
    assert forward(store, "echo", {}) == {"echo": {}}


def test_a_request_for_another_store_is_not_taken(relay: RelayServer, store: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    answer = raw_call(relay.path, request_line(other))
    assert answer["code"] == wire.OTHER_STORE


def test_an_oversized_request_is_refused_unbuffered_and_the_server_keeps_serving(
    relay: RelayServer, store: Path
) -> None:
    huge = b'{"v": 1, "method": "echo", "params": {"x": "' + b"a" * (wire.MAX_MESSAGE_BYTES + 10) + b'"}}\n'
    answer = raw_call(relay.path, huge)
    assert answer == {"ok": False, "code": wire.TOO_LARGE, "error": answer["error"]}
    assert "32 MiB" in answer["error"]
    assert forward(store, "echo", {"after": "big"}) == {"echo": {"after": "big"}}


def test_a_request_just_under_the_cap_is_served(
    relay_dir: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 4096)
    server = RelayServer(store, {"echo": _echo})
    server.start()
    try:
        base = len(request_line(store, params={"x": ""})) - 1  # without its newline
        fits = "b" * (4096 - base)
        assert raw_call(server.path, request_line(store, params={"x": fits})) == {
            "ok": True,
            "result": {"echo": {"x": fits}},
        }
        answer = raw_call(server.path, request_line(store, params={"x": fits + "b"}))
        assert answer["code"] == wire.TOO_LARGE
        assert "4096 bytes" in answer["error"]
        with pytest.raises(RelayRefusedError, match="too large") as info:
            forward(store, "echo", {"x": fits + "b"})
        assert info.value.code == wire.TOO_LARGE
    finally:
        server.close()


def test_concurrent_calls_are_all_answered_and_the_method_table_serialises_them(
    relay_dir: Path, store: Path
) -> None:
    calls = Calls()
    lock = threading.Lock()

    def serial(request: Request) -> dict[str, Any]:
        with lock:  # the server's table runs its calls through one gate, as the engine's does
            return calls(request)

    server = RelayServer(store, {"n": serial})
    server.start()
    try:
        with ThreadPoolExecutor(12) as pool:
            results = list(pool.map(lambda n: forward(store, "n", {"n": n}), range(60)))
    finally:
        server.close()
    assert results == [{"n": n} for n in range(60)]
    assert sorted(calls.seen) == list(range(60))
    assert calls.overlaps == 0


def test_a_silent_peer_does_not_block_others(relay: RelayServer, store: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(relay.path))  # connected, never sends
        assert forward(store, "echo", {"other": 1}) == {"echo": {"other": 1}}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_get_an_answer_and_never_stop_the_server(
    relay: RelayServer, store: Path, junk: bytes
) -> None:
    answer = raw_call(relay.path, junk + b"\n")
    assert answer["ok"] is False or answer["result"]["echo"] is not None
    assert forward(store, "echo", {"ok": 1}) == {"echo": {"ok": 1}}


# --------------------------------------------------------------------------- other users


def _as_nobody(action: Any) -> tuple[int, str]:
    """Run ``action()`` in a forked child as ``nobody``; its exit code and what it printed."""
    import pwd  # POSIX only, used only here

    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            out = action()
            os.write(write, json.dumps(out).encode())
            code = 0
        except BaseException as exc:
            os.write(write, json.dumps({"raised": f"{type(exc).__name__}: {exc}"}).encode())
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root")


@needs_root
def test_another_user_cannot_reach_the_socket(relay: RelayServer, store: Path) -> None:
    def connect() -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            try:
                conn.connect(str(relay.path))
            except PermissionError:
                return "denied"
            return "connected"

    code, out = _as_nobody(connect)
    assert (code, json.loads(out)) == (0, "denied")
    assert forward(store, "echo", {}) == {"echo": {}}


@needs_root
def test_another_user_is_refused_by_peer_credentials_even_when_the_files_let_it_in(
    relay: RelayServer, store: Path, relay_dir: Path
) -> None:
    seen: list[Request] = []
    relay.methods["echo"] = lambda request: seen.append(request) or {"ran": True}
    relay_dir.parent.chmod(0o711)
    relay_dir.chmod(0o711)  # fault injection: permissions loosened by someone
    relay.path.chmod(0o666)
    line = request_line(store)

    def call() -> dict[str, Any]:
        return raw_call(relay.path, line)

    try:
        code, out = _as_nobody(call)
    finally:
        relay_dir.parent.chmod(0o700)
        relay_dir.chmod(0o700)
        relay.path.chmod(0o600)
    assert code == 0, out
    answer = json.loads(out)
    assert answer["ok"] is False
    assert answer["code"] == wire.PEER_REFUSED
    assert "uid" in answer["error"]
    assert seen == []  # the method never ran
    assert forward(store, "echo", {}) == {"ran": True}


@needs_root
def test_the_client_of_another_user_gets_none_not_an_error(relay: RelayServer, store: Path) -> None:
    code, out = _as_nobody(lambda: forward(store, "echo", {}))
    assert (code, json.loads(out)) == (0, None)


def test_a_server_that_never_started_closes_cleanly(relay_dir: Path, store: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        server = RelayServer(store, {"echo": _echo})
        server.close()
        server.close()  # idempotent
    assert len(os.listdir("/proc/self/fd")) == before
    assert forward(store, "echo", {}) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=60), min_size=1, max_size=40
    )
)
def test_every_store_path_maps_to_one_short_socket(relay_dir: Path, parts: list[str]) -> None:
    store = Path("/", *parts)
    try:
        os.fsencode(str(store))
    except UnicodeEncodeError:  # no file on this system can have this name: no relay, a clear error
        with pytest.raises(wire.RelayUnavailableError, match="cannot be named"):
            wire.socket_path(store)
        return
    path = wire.socket_path(store)
    assert len(os.fsencode(str(path))) < wire.SUN_PATH_MAX
    assert path.parent == relay_dir
    assert wire.socket_path(store) == path
    assert wire.socket_path(store / "x") != path
