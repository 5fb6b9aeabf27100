"""Protocol fuzzing (issue 5, item 4): every Retrace method and notification, fuzzed with hypothesis
against ONE real server process over raw framed JSON-RPC.

Inputs: well-formed params built from real ids (checkpoint ids and their prefixes, session ids,
workspace paths) and from hostile values (``..`` paths, lone surrogates, 1 MB strings, huge
integers, deep nesting), then mutated — a member dropped, retyped, added; the params replaced by a
non-object; the method name unknown — plus notifications with garbage, cancels of unknown ids and
unframed garbage, all pipelined in batches like a busy editor.

Every request must be answered with a result that validates against
``shared-schema/protocol.schema.json`` or with a JSON-RPC error (documented code, one-line
message, never ``-32603`` "internal error": that would be a server bug); the server must be alive
after every batch. A batch of rejected-only calls must leave the store byte-identical. Out-of-order
use (before ``initialize``, twice ``initialize``, after ``shutdown``) gets clear errors.

Bounded CI variant by default; ``RETRACE_FULL_CAMPAIGNS=1`` runs the full one (≥ 10,000 inputs).
"""

from __future__ import annotations

import json
import string
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reliability.conftest import FULL, record_figures
from tests.reliability.inputs_support import (
    METHODS,
    RawServer,
    schema_validator,
    scripted_model,
    store_digest,
)

from retrace.offline import FakeModel

# The full variant is also a `slow` campaign, so `-m slow` selects it.
pytestmark = [pytest.mark.e2e, *([pytest.mark.slow] if FULL else [])]

BATCHES = 3000 if FULL else 300
"""Hypothesis examples; each sends a batch of 2-8 inputs."""
MIN_INPUTS = 10_000 if FULL else 1_000
DOCUMENTED_CODES = {-32700, -32600, -32601, -32602, -32002, -32000, -32800}
"""Parse error, invalid request, unknown method, invalid params, not initialized, Retrace error,
request cancelled. ``-32603`` (internal error) is deliberately absent."""

CLIENT = {m["name"]: m for m in METHODS["methods"] if m["direction"].startswith("client")}
REQUESTS = sorted(n for n, m in CLIENT.items() if m["direction"] == "clientRequest")
NOTIFICATIONS = sorted(n for n, m in CLIENT.items() if m["direction"] == "clientNotification")
VALIDATORS = {
    name: schema_validator(m["result"]) for name, m in CLIENT.items() if m.get("result") is not None
}


class Tally:
    """What the fuzzer sent and got back (printed and written into the report)."""

    def __init__(self) -> None:
        self.inputs = 0
        self.requests: Counter[str] = Counter()
        self.notifications = 0
        self.garbage = 0
        self.results = 0
        self.errors: Counter[int] = Counter()
        self.internal: list[str] = []
        self.bad_errors: list[str] = []


TALLY = Tally()


# --------------------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def model() -> Iterator[FakeModel]:
    fake = scripted_model(
        [
            {
                "match": {"lastUserTextContains": "seed"},
                "text": "Seeding.",
                "toolCalls": [
                    {"name": "write_file", "input": {"path": "seed.txt", "content": "seed\n"}},
                    {"name": "edit_file", "input": {"path": "a.py", "old_string": "1", "new_string": "2"}},
                    {"name": "run_command", "input": {"command": "mkdir -p out && echo made > out/x.txt"}},
                ],
            },
            {"match": {"lastUserTextContains": "seed"}, "text": "Seeded."},
        ],
        name="fuzz",
    )
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: FakeModel) -> Iterator[RawServer]:
    root = tmp_path_factory.mktemp("fuzz")
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n")
    (ws / "src" / "b.txt").write_text("hello\n")
    env = {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "fuzz-key", "RETRACE_FAKE_MODEL": ""}
    srv = RawServer(
        ws,
        root / "store",
        env=env,
        settings={"permissions": {"write": "auto", "command": "auto"}},
        log_path=root / "server.log",
    )
    assert "result" in srv.initialize()
    prompt = srv.request("retrace/agent/prompt", {"text": "seed the store"})
    assert "result" in prompt, prompt
    srv.wait_idle()
    yield srv
    srv.close()


def known_ids(srv: RawServer) -> tuple[list[str], list[str]]:
    timeline = srv.request("retrace/timeline/get", {})["result"]
    checkpoints = [c["id"] for c in timeline["checkpoints"]]
    sessions = [s["id"] for s in timeline["sessions"]]
    return checkpoints, sessions


# --------------------------------------------------------------------------- strategies

HOSTILE_STRINGS = [
    "",
    " ",
    "current",
    "../../etc/passwd",
    "/etc/passwd",
    "a" * 300,
    "\x00",
    "\ud800",
    "\udcff.txt",
    "src/../..",
    "😀" * 50,
    "%2e%2e/%2e%2e",
    "file:///etc/passwd",
    "C:\\Windows\\win.ini",
    "\n\r\t",
    "${HOME}",
    "$(rm -rf /)",
    "../../fuzz-escape",
    "/tmp/retrace-fuzz-escape",
]
REASONS = ["wrongApproach", "brokeTests", "unwantedChanges", "offTrack", "other"]
ESCAPES = ("fuzz-escape", "/tmp/retrace-fuzz-escape")
"""Where a client-chosen id or path used as a file name would land outside the store."""
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(blacklist_categories=()), max_size=30)
    | st.sampled_from(HOSTILE_STRINGS)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
oversized = st.integers(min_value=100_000, max_value=1_000_000).map(lambda n: "x" * n)
deep = st.integers(min_value=50, max_value=400).map(lambda n: json.loads("[" * n + "]" * n))


def id_strategy(checkpoints: list[str]) -> st.SearchStrategy[str]:
    real = st.sampled_from(checkpoints) if checkpoints else st.just("0000")
    return st.one_of(
        real,
        real.map(lambda c: c[:4]),
        real.map(lambda c: c[:1]),
        real.map(lambda c: c + "x"),
        st.text(alphabet=string.ascii_lowercase + string.digits, min_size=0, max_size=14),
        st.sampled_from(HOSTILE_STRINGS),
    )


def remote_builders(session_or_random: st.SearchStrategy[str]) -> dict[str, st.SearchStrategy[Any]]:
    """``retrace/remote/*``: this server has no remote, so each is a clear one-line error."""
    names = st.none() | st.sampled_from(["origin", "", "../x", *HOSTILE_STRINGS]) | st.text(max_size=12)
    remote = st.fixed_dictionaries({}, optional={"remote": names})
    return {
        "retrace/remote/status": remote,
        "retrace/remote/push": remote,
        "retrace/remote/pull": remote,
        "retrace/remote/sessions": remote,
        "retrace/remote/open": st.fixed_dictionaries(
            {"sessionId": session_or_random},
            optional={"remote": names, "storeId": st.none() | st.sampled_from(HOSTILE_STRINGS)},
        ),
    }


def valid_params(method: str, ids: st.SearchStrategy[str], sessions: list[str]) -> st.SearchStrategy[Any]:
    """Params of the right shape (they may still name things that do not exist)."""
    session = st.sampled_from(sessions) if sessions else st.just("ses_missing")
    session_or_random = session | st.text(max_size=12) | st.sampled_from(HOSTILE_STRINGS)
    paths = st.sampled_from(["a.py", "src/b.txt", "seed.txt", "out/x.txt", "missing.txt", *HOSTILE_STRINGS])
    texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
    mode = st.sampled_from(["code", "conversation", "both"])
    task_ids = st.sampled_from(["task_missing", "", "../../store"]) | st.text(max_size=12)
    task = st.fixed_dictionaries({"sessionId": session_or_random, "taskId": task_ids})
    task_or_none = st.none() | task
    builders: dict[str, st.SearchStrategy[Any]] = {
        "retrace/tasks/list": st.fixed_dictionaries({"sessionId": session_or_random}),
        "retrace/tasks/timeline": task,
        "retrace/tasks/apply": task,
        "retrace/tasks/discard": task,
        "retrace/tasks/resume": task,
        "retrace/agent/prompt": st.fixed_dictionaries(
            {"text": texts},
            optional={
                "sessionId": session_or_random,
                "mentions": st.lists(paths, max_size=3),
                "retryOf": st.none() | ids | st.sampled_from(HOSTILE_STRINGS),
                "context": st.none()
                | st.fixed_dictionaries(
                    {"path": paths},
                    optional={"selections": json_values, "visible": json_values, "openEditors": json_values},
                ),
            },
        ),
        "retrace/workspace/files": st.fixed_dictionaries(
            {},
            optional={
                "query": st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=20),
                "limit": st.integers(min_value=-5, max_value=100_000),
            },
        ),
        "retrace/agent/cancel": st.fixed_dictionaries({"sessionId": session_or_random}),
        "retrace/session/list": st.just({}),
        "retrace/background/list": st.fixed_dictionaries(
            {}, optional={"sessionId": st.none() | session_or_random, "includeEnded": st.booleans()}
        ),
        "retrace/background/stop": st.fixed_dictionaries(
            {"handle": st.sampled_from(["bg-1", "bg-0", ""]) | st.text(max_size=12)}
        ),
        "retrace/stats": st.just({}),
        "retrace/store/verify": st.fixed_dictionaries({}, optional={"quick": st.booleans()}),
        "retrace/store/gc": st.just({}),
        "retrace/agents/integrate": st.fixed_dictionaries(
            {"agent": st.sampled_from(["claude-code", "gemini-cli", "cline", ""]) | st.text(max_size=12)},
            optional={"remove": st.booleans()},
        ),
        "retrace/metrics/get": st.fixed_dictionaries({}, optional={"text": st.booleans()}),
        "retrace/health/get": st.just({}),
        "retrace/restore/reason": st.fixed_dictionaries(
            {
                "checkpointId": ids,
                "reason": st.sampled_from(
                    ["wrongApproach", "brokeTests", "unwantedChanges", "offTrack", "other"]
                )
                | texts,
            },
            optional={"mode": st.none() | st.sampled_from(["code", "conversation", "both", "all"])},
        ),
        "retrace/toolCalls/search": st.fixed_dictionaries(
            {},
            optional={
                "tool": st.none() | st.text(max_size=12),
                "inputContains": st.none() | st.text(max_size=12),
            },
        ),
        "retrace/timeline/get": st.fixed_dictionaries(
            {}, optional={"sessionId": st.none() | session_or_random}
        ),
        "retrace/timeline/tree": st.fixed_dictionaries(
            {},
            optional={
                "sessionId": st.none() | session_or_random,
                "maxRows": st.integers(min_value=-5, max_value=2_000_000),
                "before": st.none() | ids | st.sampled_from(HOSTILE_STRINGS),
                "outline": st.booleans(),
                "focus": st.none() | session_or_random,
                "task": task_or_none,
                "filter": st.none()
                | st.fixed_dictionaries(
                    {},
                    optional={
                        "tool": st.none() | texts,
                        "path": st.none() | paths,
                        "text": st.none() | texts,
                    },
                ),
            },
        ),
        "retrace/file/history": st.fixed_dictionaries(
            {"path": paths},
            optional={
                "sessionId": st.none() | session_or_random,
                "cursor": st.none() | ids | st.sampled_from(HOSTILE_STRINGS),
                "limit": st.integers(min_value=-5, max_value=100_000),
            },
        ),
        "retrace/export/git": st.fixed_dictionaries(
            {
                "checkpointId": ids,
                "branch": st.sampled_from(["retrace/x", "bad..name", "-x", "", "main"]) | texts,
            },
            optional={
                "message": st.none() | texts,
                "author": st.none() | texts | st.just("A <a@b.c>"),
                "base": st.none() | texts | st.just("HEAD"),
            },
        ),
        "retrace/attribution": st.fixed_dictionaries(
            {}, optional={"fromCheckpoint": st.none() | ids, "toCheckpoint": st.none() | ids}
        ),
        "retrace/checkpoint/get": st.fixed_dictionaries({"id": ids}, optional={"task": task_or_none}),
        "retrace/checkpoint/fileContent": st.fixed_dictionaries(
            {"id": ids | st.just("current"), "path": paths}, optional={"task": task_or_none}
        ),
        "retrace/checkpoint/diff": st.fixed_dictionaries(
            {"from": ids},
            optional={
                "to": st.none() | ids,
                "paths": st.none() | st.lists(paths, max_size=3),
                "maxPatchBytes": st.integers(min_value=1, max_value=10**9),
                "task": task_or_none,
            },
        ),
        "retrace/checkpoint/restore": st.fixed_dictionaries(
            {"id": ids, "mode": mode},
            optional={
                "dryRun": st.booleans(),
                "force": st.booleans(),
                "skipConflicts": st.booleans(),
                "paths": st.none() | st.lists(paths, max_size=3),
                "backgroundTasks": st.none() | st.sampled_from(["stop", "keep"]),
                "task": task_or_none,
            },
        ),
        "retrace/restore/undoLast": st.fixed_dictionaries(
            {}, optional={"backgroundTasks": st.none() | st.sampled_from(["stop", "keep"])}
        ),
        "retrace/restore/hunks": st.fixed_dictionaries({"checkpoint": ids, "path": paths}),
        "retrace/restore/hunk": st.fixed_dictionaries(
            {
                "checkpoint": ids,
                "path": paths,
                "hunk": st.sampled_from(["0,1,0,1", "1,0,1,1", "x", ""]) | st.text(max_size=12),
                "expectedHash": st.sampled_from(["0" * 64, "f" * 64, ""]) | st.text(max_size=70),
            }
        ),
        "retrace/restore/toPrompt": st.fixed_dictionaries(
            {"sessionId": session_or_random, "prompt": ids | st.text(max_size=20)},
            optional={
                "point": st.sampled_from(["before", "end", "middle"]),
                "mode": st.sampled_from(["code", "conversation", "both", "all"]),
                "dryRun": st.booleans(),
            },
        ),
        "retrace/bookmark/create": st.fixed_dictionaries(
            {
                "name": st.sampled_from(["tests pass", "", "  ", "two\nlines", "x" * 101])
                | st.text(max_size=120)
            }
        ),
        "retrace/bookmark/name": st.fixed_dictionaries(
            {"checkpointId": ids, "name": st.sampled_from(["good", "", "\u202eevil"]) | st.text(max_size=120)}
        ),
        "retrace/server/state": st.fixed_dictionaries({}),
        **remote_builders(session_or_random),
        "retrace/conversation/get": st.fixed_dictionaries({"sessionId": session_or_random}),
        "retrace/conversation/summarize": st.fixed_dictionaries(
            {"id": ids, "direction": st.sampled_from(["from", "upTo"])}
        ),
        "retrace/settings/update": st.fixed_dictionaries(
            {
                "settings": st.fixed_dictionaries(
                    {},
                    optional={
                        "permissions": st.fixed_dictionaries(
                            {},
                            optional={
                                "write": st.sampled_from(["ask", "auto", "deny"]),
                                "command": st.sampled_from(["ask", "auto", "deny"]),
                            },
                        ),
                        "maxTokens": st.integers(min_value=-5, max_value=10**6),
                        "model": st.text(max_size=20),
                        "commandTimeoutSeconds": st.floats(min_value=-1, max_value=1e6),
                    },
                )
            }
        ),
        # A text piece of an editor model's reply: for a request nobody made, or malformed.
        "retrace/model/chatDelta": st.fixed_dictionaries(
            {"requestId": st.sampled_from(["", "lm-1", "\u0000"]) | st.text(max_size=40), "text": st.text()}
        )
        | st.fixed_dictionaries({}, optional={"requestId": json_values, "text": json_values}),
        "retrace/editor/didChangeState": st.fixed_dictionaries(
            {
                "activeEditor": st.none() | paths,
                "openEditors": st.lists(
                    st.fixed_dictionaries(
                        {"uri": paths},
                        optional={
                            "selections": json_values,
                            "visibleRanges": json_values,
                            "dirty": st.booleans(),
                        },
                    ),
                    max_size=3,
                ),
            }
        ),
    }
    return builders[method]


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A well-formed params object with one thing broken (or the whole thing replaced)."""
    params = draw(base)
    how = draw(st.sampled_from(["drop", "retype", "extra", "replace", "oversize", "deep", "keep"]))
    if how == "replace" or not isinstance(params, dict):
        return draw(json_values | st.lists(json_values, max_size=3))
    params = dict(params)
    keys = sorted(params)
    if how == "drop" and keys:
        params.pop(draw(st.sampled_from(keys)))
    elif how == "retype" and keys:
        params[draw(st.sampled_from(keys))] = draw(json_values)
    elif how == "extra":
        params[draw(st.text(min_size=1, max_size=10))] = draw(json_values)
    elif how == "oversize":
        target = draw(st.sampled_from(keys)) if keys else "text"
        params[target] = draw(oversized)
    elif how == "deep":
        target = draw(st.sampled_from(keys)) if keys else "x"
        params[target] = draw(deep)
    return params


@st.composite
def one_input(draw: st.DrawFn, ids: st.SearchStrategy[str], sessions: list[str]) -> tuple[str, str, Any]:
    """(kind, method, params): kind is ``request``, ``notification`` or ``garbage``."""
    kind = draw(st.sampled_from(["request"] * 7 + ["notification", "garbage"]))
    if kind == "garbage":
        raw = draw(
            st.sampled_from(
                [
                    "{not json",
                    "[1, 2, 3]",
                    '"just a string"',
                    "null",
                    '{"jsonrpc": "2.0"}',
                    '{"jsonrpc": "2.0", "id": 77777, "result": {"unexpected": true}}',
                    '{"jsonrpc": "1.0", "id": "x", "method": "retrace/stats"}',
                    '{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 424242}}',
                    '{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {"nested": []}}}',
                    '{"jsonrpc": "2.0", "id": null, "method": "retrace/stats"}',
                    '{"jsonrpc": "2.0", "id": [1], "method": "retrace/stats"}',
                ]
            )
        )
        return kind, "", raw
    if kind == "notification":
        method = draw(
            st.sampled_from([*NOTIFICATIONS, "retrace/unknown/notify", "$/setTrace", *REQUESTS[:2]])
        )
        if method in CLIENT and draw(st.booleans()):
            params = draw(mutated(valid_params(method, ids, sessions)))
        else:
            params = draw(json_values)
        return kind, method, params
    method = draw(
        st.sampled_from([*REQUESTS, *REQUESTS, "retrace/unknown", "retrace/checkpoint", "shutdownx"])
    )
    if method not in CLIENT:
        return kind, method, draw(json_values)
    base = valid_params(method, ids, sessions)
    params = draw(base if draw(st.integers(0, 3)) == 0 else mutated(base))
    return kind, method, params


# --------------------------------------------------------------------------- checks


def check_answer(method: str, response: dict[str, Any]) -> None:
    if "result" in response and "error" not in response:
        TALLY.results += 1
        validator = VALIDATORS.get(method)
        assert validator is not None, f"{method} is unknown yet answered with a result: {response}"
        errors = sorted(validator.iter_errors(response["result"]), key=str)
        assert not errors, f"{method} result does not match the schema: {errors[0].message}"
        return
    error = response.get("error")
    assert isinstance(error, dict), f"{method}: neither result nor error: {response}"
    code, message = error.get("code"), error.get("message")
    assert isinstance(code, int) and isinstance(message, str) and message, response
    TALLY.errors[code] += 1
    if code == -32603:
        TALLY.internal.append(f"{method}: {message[:300]}")
    elif code not in DOCUMENTED_CODES or "Traceback" in message:
        TALLY.bad_errors.append(f"{method}: {code} {message[:300]}")


def send_batch(srv: RawServer, batch: list[tuple[str, str, Any]]) -> None:
    calls: list[tuple[str, Any]] = []
    for kind, method, params in batch:
        TALLY.inputs += 1
        if kind == "garbage":
            TALLY.garbage += 1
            srv.send_raw(params.encode("utf-8"))
        elif kind == "notification":
            TALLY.notifications += 1
            srv.notify(method, params)
        else:
            TALLY.requests[method] += 1
            calls.append((method, params))
    # A request after the batch proves notifications and garbage did not wedge the server.
    calls.append(("retrace/session/list", {}))
    answers = srv.request_many(calls, timeout=120)
    for (method, _), answer in zip(calls, answers, strict=True):
        check_answer(method, answer)
    assert srv.alive(), "the server died"


# --------------------------------------------------------------------------- tests


SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
"""Big generated params and a real server are slow on purpose."""


def test_fuzz_every_method(server: RawServer) -> None:
    checkpoints, sessions = known_ids(server)
    assert checkpoints and sessions, "the seed turn made checkpoints"
    ids = id_strategy(checkpoints)

    @settings(
        max_examples=BATCHES,
        deadline=None,
        database=None,
        suppress_health_check=SUPPRESSED,
    )
    @given(st.lists(one_input(ids, sessions), min_size=2, max_size=8))
    def fuzz(batch: list[tuple[str, str, Any]]) -> None:
        send_batch(server, batch)

    fuzz()

    # Random draws need not reach every method (more methods, same budget): a sweep then sends
    # each request method its (possibly mutated) params, so coverage never rests on chance.
    @settings(
        max_examples=2,
        deadline=None,
        database=None,
        suppress_health_check=SUPPRESSED,
    )
    @given(st.tuples(*(mutated(valid_params(m, ids, sessions)) for m in REQUESTS)))
    def sweep(params: tuple[Any, ...]) -> None:
        calls = [("request", m, p) for m, p in zip(REQUESTS, params, strict=True)]
        for start in range(0, len(calls), 8):
            send_batch(server, calls[start : start + 8])

    sweep()
    server.wait_idle(120)
    # Every method was exercised, and the server still does real work afterwards.
    assert set(TALLY.requests) >= set(REQUESTS)
    timeline = server.request("retrace/timeline/get", {})
    check_answer("retrace/timeline/get", timeline)
    assert "result" in timeline
    assert not TALLY.internal, f"{len(TALLY.internal)} internal errors, e.g. {TALLY.internal[:5]}"
    fuzz_root = server.store.parent
    assert sorted(p.name for p in fuzz_root.iterdir()) == ["server.log", "store", "ws"]
    assert not Path(ESCAPES[1]).exists() and not (fuzz_root.parent / ESCAPES[0]).exists()
    assert not TALLY.bad_errors, TALLY.bad_errors[:5]
    assert TALLY.inputs >= MIN_INPUTS, TALLY.inputs
    # Rejections are logged as one line each; a traceback through Retrace's own code means an
    # input was not handled. (pygls still logs its own traceback for a malformed standard LSP
    # message such as ``$/setTrace`` with wrong params; it answers or ignores it and runs on.)
    log_text = server.log_path.read_text("utf-8", errors="replace")
    marker = "/retrace/"
    frames = [line for line in log_text.splitlines() if line.strip().startswith("File ") and marker in line]
    assert not frames, frames[:10]


def rejected_only_calls(checkpoints: list[str]) -> list[tuple[str, Any]]:
    """Calls the server must refuse without writing anything."""
    calls: list[tuple[str, Any]] = []
    for method in REQUESTS:
        calls += [(method, [1, 2]), (method, "params"), (method, 42), (method, {"unknownField": 1})]
    calls += [
        ("retrace/agent/prompt", {"text": ""}),
        ("retrace/agent/prompt", {"text": 5}),
        ("retrace/agent/prompt", {"text": "\ud800 lone surrogate"}),
        ("retrace/agent/prompt", {"text": "hi", "sessionId": "ses_does_not_exist"}),
        ("retrace/agent/cancel", {}),
        ("retrace/checkpoint/get", {"id": "zzzz-missing"}),
        ("retrace/checkpoint/fileContent", {"id": "zzzz-missing", "path": "a.py"}),
        ("retrace/checkpoint/fileContent", {"id": "current", "path": "../../etc/passwd"}),
        ("retrace/checkpoint/fileContent", {"id": "current", "path": "x" * 300}),
        ("retrace/checkpoint/fileContent", {"id": "current", "path": "a\x00b"}),
        ("retrace/checkpoint/fileContent", {"id": "current", "path": "\ud800"}),
        ("retrace/checkpoint/diff", {"from": "zzzz-missing"}),
        ("retrace/checkpoint/diff", {"from": checkpoints[0], "maxPatchBytes": -1}),
        ("retrace/checkpoint/restore", {"id": "zzzz-missing", "mode": "both"}),
        ("retrace/checkpoint/restore", {"id": checkpoints[0], "mode": "everything"}),
        ("retrace/checkpoint/restore", {"id": checkpoints[0], "mode": "code", "force": "maybe"}),
        ("retrace/checkpoint/restore", {"id": checkpoints[0][:1], "mode": "code"}),
        ("retrace/export/git", {"checkpointId": "zzzz-missing", "branch": "x"}),
        ("retrace/export/git", {"checkpointId": checkpoints[0], "branch": "bad..name"}),
        ("retrace/export/git", {"checkpointId": checkpoints[0], "branch": "x\x00y"}),
        ("retrace/attribution", {"fromCheckpoint": "zzzz-missing"}),
        ("retrace/restore/reason", {"checkpointId": "zzzz-missing", "reason": "other"}),
        ("retrace/restore/reason", {"checkpointId": checkpoints[0], "reason": "bored"}),
        ("retrace/restore/reason", {"checkpointId": checkpoints[0], "reason": "other", "mode": "all"}),
        ("retrace/bookmark/create", {"name": ""}),
        ("retrace/bookmark/create", {"name": "a\x1bb"}),
        ("retrace/bookmark/create", {"name": "x" * 101}),
        ("retrace/bookmark/name", {"checkpointId": "zzzz-missing", "name": "x"}),
        ("retrace/bookmark/name", {"checkpointId": checkpoints[0], "name": "line\u2028two"}),
        ("retrace/conversation/get", {"sessionId": "ses_does_not_exist"}),
        ("retrace/conversation/summarize", {"id": "zzzz-missing", "direction": "from"}),
        ("retrace/conversation/summarize", {"id": checkpoints[0], "direction": "sideways"}),
        ("retrace/settings/update", {"settings": {"permissions": {"write": "always"}}}),
        ("retrace/settings/update", {"settings": {"maxTokens": "many"}}),
        ("retrace/tasks/list", {"sessionId": "ses_does_not_exist"}),
        ("retrace/tasks/apply", {"sessionId": "ses_does_not_exist", "taskId": "../../x"}),
        ("retrace/tasks/discard", {"sessionId": "ses_does_not_exist", "taskId": "task_x"}),
        ("retrace/checkpoint/restore", {"id": checkpoints[0], "mode": "code", "task": {"sessionId": "x"}}),
        (
            "retrace/checkpoint/get",
            {"id": checkpoints[0], "task": {"sessionId": "ses_does_not_exist", "taskId": "t"}},
        ),
        ("retrace/unknown/method", {}),
    ]
    return calls


def test_rejected_calls_leave_the_store_unchanged(server: RawServer) -> None:
    server.wait_idle(120)
    checkpoints, _ = known_ids(server)
    calls = rejected_only_calls(checkpoints) * 3
    before = store_digest(server.store)
    answers = server.request_many(calls, timeout=120)
    for (method, params), answer in zip(calls, answers, strict=True):
        assert "error" in answer, f"{method} {params!r} was accepted: {answer}"
        check_answer(method, answer)
    for method in NOTIFICATIONS:
        server.notify(method, {"garbage": True})
        server.notify(method, [1])
    server.wait_idle(60)
    assert store_digest(server.store) == before, "a rejected call changed the store"
    assert server.alive()
    TALLY.inputs += len(calls) + 2 * len(NOTIFICATIONS)
    record_figures(
        "protocol-fuzz",
        "full" if FULL else "ci",
        {
            "inputs": TALLY.inputs,
            "requests": sum(TALLY.requests.values()),
            "requestsByMethod": dict(TALLY.requests),
            "notifications": TALLY.notifications,
            "garbageFrames": TALLY.garbage,
            "validResults": TALLY.results,
            "errorsByCode": {str(k): v for k, v in sorted(TALLY.errors.items())},
            "internalErrors": len(TALLY.internal),
            "rejectedOnlyCallsStoreUnchanged": len(calls),
            "serverProcesses": 1,
            "serverAliveAfter": server.alive(),
        },
    )


def test_out_of_order_calls_get_clear_errors(tmp_path: Path, model: FakeModel) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    env = {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "fuzz-key", "RETRACE_FAKE_MODEL": ""}
    srv = RawServer(ws, tmp_path / "store", env=env, log_path=tmp_path / "server.log")
    try:
        for method in REQUESTS:
            answer = srv.request(method, {})
            # Params are checked first (a malformed call is malformed at any time), then readiness.
            assert answer["error"]["code"] in (-32002, -32602), answer
            if answer["error"]["code"] == -32002:
                assert "initialize" in answer["error"]["message"]
        for method in NOTIFICATIONS:
            srv.notify(method, {"openEditors": [], "activeEditor": None})
        assert not (tmp_path / "store").exists(), "nothing is written before initialize"
        assert "result" in srv.initialize()
        again = srv.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}, timeout=10
        )
        # Refused: a second initialize must not replace the open store or drop the workspace.
        assert again["error"]["code"] == -32600 and "once" in again["error"]["message"], again
        assert "result" in srv.request("retrace/timeline/get", {})
        old_version = srv.request_raw_id('{"jsonrpc": "1.0", "id": "v1", "method": "retrace/stats"}', "v1")
        assert old_version["error"]["code"] == -32600, old_version
        srv.send_raw(b'{"jsonrpc": "2.0", "id": [1], "method": "retrace/stats"}')
        srv.send_raw(b'{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {"x": 1}}}')
        srv.send_raw(b'[{"jsonrpc": "2.0", "id": 5, "method": "retrace/stats"}]')
        assert "result" in srv.request("retrace/stats", {})  # still serving, in order
        assert [o["error"]["code"] for o in srv.orphans] == [-32600], srv.orphans
        assert "result" in srv.request("shutdown", None)
        after = srv.request("retrace/timeline/get", {}, timeout=10)  # answered, never left waiting
        assert after["error"]["code"] == -32600 and "shut down" in after["error"]["message"], after
        srv.notify("exit")
        assert srv.proc.wait(timeout=20) == 0
    finally:
        srv.close()


def test_client_chosen_session_ids_never_become_paths(server: RawServer) -> None:
    """A session id is a journal directory name: a client may continue a session the server
    named, never make up one (``../../x`` once wrote a journal outside the store)."""
    server.wait_idle(120)
    before = store_digest(server.store)
    root = server.store.parent
    for hostile in ("../../escape-session", "/tmp/retrace-escape-session", "a/b", "ses_made_up", "."):
        answer = server.request("retrace/agent/prompt", {"text": "hi", "sessionId": hostile})
        assert answer.get("error", {}).get("code") == -32000, answer
        assert "unknown session" in answer["error"]["message"]
    assert not Path("/tmp/retrace-escape-session").exists()
    assert not (root.parent.parent / "escape-session").exists()
    assert store_digest(server.store) == before
