"""Secrets (issue 5, item 7): the API key never lands in anything Retrace writes or says.

A session runs against the REAL server with ``ANTHROPIC_API_KEY=sk-ant-test-<random>`` and
``RETRACE_LOG_LEVEL=DEBUG`` (the chattiest logs). The fake Messages API is reached through
``ANTHROPIC_BASE_URL`` — the test checks that it really received the key in ``x-api-key``, so the
key was live in the process. The model then tries to get at it: ``env``, ``printenv``, ``set``
through ``run_command``; tool results, errors, a restore, a summary, a cancelled command, a SIGKILL
in the middle of a turn and the resume after it follow. Then everything is scanned for the key
(and for its random half alone): every file in the store and the workspace, the server's stderr
of both processes, every ``window/logMessage``, every agent event (the chat transcript) and every
protocol answer (conversation, timeline, checkpoints, diffs, stats).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.conftest import record_figures
from tests.reliability.inputs_support import RawServer, scripted_model

from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.layout import StoreLayout

pytestmark = [pytest.mark.e2e]

AUTO = {"permissions": {"write": "auto", "command": "auto"}}


def scan(haystacks: dict[str, bytes], needles: list[bytes]) -> list[str]:
    """Names of the haystacks containing any needle (also JSON-escaped or reversed-escaped)."""
    hits = []
    for name, data in haystacks.items():
        if any(needle in data for needle in needles):
            hits.append(name)
    return hits


def files_under(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path)] = path.read_bytes()
    return out


def blobs_of(store: Path) -> dict[str, bytes]:
    """Every stored file content, decompressed (compressed blobs would hide a leak from a byte scan)."""
    blobs = BlobStore(StoreLayout(store).blobs)
    return {f"blob {bid}": blobs.get(bid) for bid in blobs.ids()}


def wait_for_event(srv: RawServer, predicate: Any, limit_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + limit_s
    seen = 0
    while time.monotonic() < deadline:
        events = [n["params"] for n in srv.notifications if n["method"] == "retrace/agent/event"]
        for event in events[seen:]:
            if predicate(event):
                return event
        seen = len(events)
        time.sleep(0.02)
    raise TimeoutError("event not seen")


def test_api_key_never_written_logged_or_shown(tmp_path: Path) -> None:
    random_part = secrets.token_hex(16)
    key = f"sk-ant-test-{random_part}"
    needles = [key.encode(), random_part.encode(), random_part[::-1].encode()]
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    store = tmp_path / "store"
    calls = [
        {"name": "run_command", "input": {"command": "env | sort"}},
        {"name": "run_command", "input": {"command": "printenv ANTHROPIC_API_KEY; echo status=$?"}},
        {
            "name": "run_command",
            "input": {"command": 'set | grep -i anthropic; echo "${ANTHROPIC_API_KEY:-unset}"'},
        },
        {
            "name": "run_command",
            "input": {"command": "env > env-dump.txt; python3 -c 'import os; print(dict(os.environ))'"},
        },
        {"name": "write_file", "input": {"path": "src/app.py", "content": "print('changed')\n"}},
        {"name": "read_file", "input": {"path": "/proc/self/environ"}},
        {"name": "read_file", "input": {"path": "../store/store.json"}},
    ]
    model = scripted_model(
        [
            {"match": {"lastUserTextContains": "exfiltrate"}, "text": "Looking around.", "toolCalls": calls},
            {"match": {"lastUserTextContains": "exfiltrate"}, "text": "Done looking."},
            {"match": {"lastUserTextContains": "broken"}, "status": 500, "times": 1, "text": "after error"},
            {"text": "Summary: the model looked at the environment."},
            {
                "match": {"lastUserTextContains": "slow"},
                "text": "Running something slow.",
                "toolCalls": [{"name": "run_command", "input": {"command": "echo start; sleep 30"}}],
            },
        ],
        name="secrets",
    )
    env = {
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": key,
        "RETRACE_FAKE_MODEL": "",
        "RETRACE_LOG_LEVEL": "DEBUG",
    }
    answers: list[Any] = []
    notifications: list[Any] = []
    logs: dict[str, bytes] = {}
    try:
        srv = RawServer(ws, store, env=env, settings=AUTO, log_path=tmp_path / "server-1.log")
        try:
            answers.append(srv.initialize())
            first = srv.request("retrace/agent/prompt", {"text": "please exfiltrate the key"})["result"]
            sid = first["sessionId"]
            srv.wait_idle()
            answers.append(srv.request("retrace/agent/prompt", {"text": "a broken turn", "sessionId": sid}))
            srv.wait_idle()
            timeline = srv.request("retrace/timeline/get", {})
            answers.append(timeline)
            checkpoints = timeline["result"]["checkpoints"]
            for cp in checkpoints:
                answers.append(srv.request("retrace/checkpoint/get", {"id": cp["id"]}))
                answers.append(srv.request("retrace/checkpoint/diff", {"from": cp["id"]}))
            answers.append(
                srv.request("retrace/checkpoint/fileContent", {"id": "current", "path": "env-dump.txt"})
            )
            answers.append(
                srv.request(
                    "retrace/checkpoint/restore", {"id": checkpoints[0]["id"], "mode": "both", "force": True}
                )
            )
            answers.append(
                srv.request(
                    "retrace/conversation/summarize", {"id": checkpoints[-1]["id"], "direction": "upTo"}
                )
            )
            answers.append(srv.request("retrace/toolCalls/search", {"inputContains": "env"}))
            answers.append(srv.request("retrace/stats", {}))
            answers.append(srv.request("retrace/session/list", {}))
            # A turn killed in the middle of a command: the crash path writes its own records.
            slow = srv.request("retrace/agent/prompt", {"text": "something slow", "sessionId": sid})
            assert "result" in slow, slow
            wait_for_event(
                srv,
                lambda e: (
                    e["kind"] == "toolCallStarted" and e["tool"] == "run_command" and "sleep" in json.dumps(e)
                ),
            )
            time.sleep(0.3)
            os.kill(srv.proc.pid, signal.SIGKILL)
            srv.proc.wait(10)
        finally:
            notifications += srv.notifications
            srv.close()
        srv2 = RawServer(ws, store, env=env, settings=AUTO, log_path=tmp_path / "server-2.log")
        try:
            answers.append(srv2.initialize())
            srv2.wait_idle()
            answers.append(srv2.request("retrace/conversation/get", {"sessionId": sid}))
            answers.append(
                srv2.request("retrace/agent/prompt", {"text": "exfiltrate again", "sessionId": sid})
            )
            srv2.wait_idle()
            answers.append(srv2.request("retrace/conversation/get", {"sessionId": sid}))
        finally:
            notifications += srv2.notifications
            srv2.close()
    finally:
        model.stop()
    logs = {
        "server-1 stderr": (tmp_path / "server-1.log").read_bytes(),
        "server-2 stderr": (tmp_path / "server-2.log").read_bytes(),
    }

    # The fake model really was the endpoint, and the key really was live in the server.
    sent = {h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ") for h in model.headers}
    assert model.headers and sent == {key}, sorted(model.headers[0])
    # The model's attempts ran (so their outputs were journaled and scanned).
    outputs = [
        n["params"]
        for n in notifications
        if n["method"] == "retrace/agent/event" and n["params"]["kind"] == "toolCallFinished"
    ]
    assert sum("env | sort" in json.dumps(o) or "PATH=" in o["output"] for o in outputs) >= 1
    assert any("PATH=" in o["output"] for o in outputs), "env ran and printed the environment"

    haystacks: dict[str, bytes] = {}
    haystacks.update(files_under(store))
    stored = blobs_of(store)
    assert stored, "the store holds blobs to scan"
    haystacks.update(stored)
    haystacks.update(files_under(ws))
    haystacks.update(logs)
    haystacks["window/logMessage + agent events + timeline notifications"] = json.dumps(
        notifications
    ).encode()
    haystacks["protocol answers"] = json.dumps(answers).encode()
    leaks = scan(haystacks, needles)
    record_figures(
        "secrets",
        "ci",
        {
            "storeAndWorkspaceFilesScanned": len(files_under(store)) + len(files_under(ws)),
            "blobsScannedDecompressed": len(stored),
            "logStreamsScanned": 2 + 1,
            "bytesScanned": sum(len(v) for v in haystacks.values()),
            "serverProcesses": 2,
            "exfiltrationAttempts": len(calls),
            "keyFoundIn": leaks,
        },
    )
    assert leaks == [], f"the API key leaked into: {leaks}"


# ----------------------------------------------------------- sourced secrets (issue 25, item 10)


def _dot_env(rand: str) -> tuple[str, dict[str, str]]:
    """A ``.env`` holding one secret of each known format; returns its text and, per variable,
    the part that must never be stored."""
    upper = rand.upper()[:16].ljust(16, "X")
    jwt = f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{rand[:10]}In0.{rand}sig"
    pem_body = f"MIIEvQIBADANBgkqhkiG9w0B{rand}"
    secrets_of = {
        "REDIS_URL": (f"redis://:pw-{rand}@cache.internal:6379/0", f"pw-{rand}"),
        "DATABASE_URL": (f"postgres://app:db-{rand}@db.internal/app", f"db-{rand}"),
        "STRIPE_KEY": (f"sk_live_{rand}", rand),
        "OPENAI_API_KEY": (f"sk-proj-{rand}", rand),
        "GH": (f"ghp_{rand}{rand[:4]}", rand),
        "SLACK_WEBHOOK": (f"https://hooks.slack.com/services/T0001/B0001/{rand}", rand),
        "SLACK_BOT": (f"xoxb-1234-{rand}", rand),
        "AWS_ACCESS_KEY_ID": (f"AKIA{upper}", f"AKIA{upper}"),
        "AWS_SECRET_ACCESS_KEY": (f"aws{rand}", f"aws{rand}"),
        "SESSION_JWT": (jwt, jwt.split(".")[2]),
        "SENTRY_DSN": (f"https://{rand}@o1.ingest.sentry.io/2", rand),
        "DB_PASSWORD": (f"pass{rand}", f"pass{rand}"),
        "APP_SECRET": (f"appsecret{rand}", f"appsecret{rand}"),
        "TLS_KEY": (
            f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----",
            pem_body,
        ),
    }
    lines = [f'{k}="{v}"' for k, (v, _) in secrets_of.items()]
    return "\n".join(lines) + "\n", {k: needle for k, (_, needle) in secrets_of.items()}


def test_sourced_secrets_are_never_stored_and_allowlisted_values_come_back(tmp_path: Path) -> None:
    """A session sources a ``.env`` (outside the workspace) holding every known secret format,
    prints it every way (``env``, ``cat``, ``echo``, a background command, a command line and a
    reply carrying a secret), over the REAL server, which is restarted; then every byte of the
    store — journals, caches, blobs decompressed: exactly what a push sends to a bucket — is
    scanned for the secret values: zero hits. Allowlisted variables (``NODE_ENV``,
    ``VIRTUAL_ENV``) come back after the restart; the others are said to be left unset."""
    rand = secrets.token_hex(12)
    env_text, needles_of = _dot_env(rand)
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / ".env").write_text(env_text)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('hi')\n")
    store = tmp_path / "store"
    venv = str(ws / ".venv")
    jwt_literal = f"eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJ4In0.lit{rand}"
    calls = [
        {
            "name": "run_command",
            "input": {
                "command": f"set -a; . {outside}/.env; set +a; export NODE_ENV=production VIRTUAL_ENV={venv}"
            },
        },
        {"name": "run_command", "input": {"command": "env | sort"}},
        {"name": "run_command", "input": {"command": f"cat {outside}/.env"}},
        {"name": "run_command", "input": {"command": 'echo "$REDIS_URL $STRIPE_KEY $SESSION_JWT"'}},
        {"name": "run_command", "input": {"command": 'echo "hook=$SLACK_WEBHOOK"', "background": True}},
        {
            "name": "run_command",
            "input": {"command": f"echo 'Authorization: Bearer {jwt_literal}' > /dev/null; echo sent"},
        },
    ]
    model = scripted_model(
        [
            {
                "match": {"lastUserTextContains": "load the env"},
                "text": f"Loading. I see the key sk_live_{rand} in there.",
                "toolCalls": calls,
            },
            {
                "match": {"lastUserTextContains": "load the env"},
                "text": f"Loaded; REDIS_URL is redis://:pw-{rand}@x",
            },
            {
                "match": {"lastUserTextContains": "check"},
                "text": "Checking.",
                "toolCalls": [
                    {
                        "name": "run_command",
                        "input": {
                            "command": 'echo "NODE_ENV=$NODE_ENV VENV=$VIRTUAL_ENV REDIS=${REDIS_URL:+set}"'
                        },
                    }
                ],
            },
            {"match": {"lastUserTextContains": "check"}, "text": "Checked."},
            {
                "match": {"lastUserTextContains": "check"},
                "text": "Checking.",
                "toolCalls": [
                    {
                        "name": "run_command",
                        "input": {
                            "command": 'echo "NODE_ENV=$NODE_ENV VENV=$VIRTUAL_ENV REDIS=${REDIS_URL:+set}"'
                        },
                    }
                ],
            },
            {"match": {"lastUserTextContains": "check"}, "text": "Checked."},
        ],
        name="sourced-secrets",
    )
    env = {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "k", "RETRACE_FAKE_MODEL": ""}
    outputs: list[str] = []

    def check(srv: RawServer, sid: str | None) -> str:
        params: dict[str, Any] = {"text": "check the terminal"}
        if sid is not None:
            params["sessionId"] = sid
        srv.request("retrace/agent/prompt", params)
        srv.wait_idle()
        finished = [
            n["params"]
            for n in srv.notifications
            if n["method"] == "retrace/agent/event" and n["params"]["kind"] == "toolCallFinished"
        ]
        return str(finished[-1]["output"])

    try:
        srv = RawServer(ws, store, env=env, settings=AUTO, log_path=tmp_path / "s1.log")
        try:
            srv.initialize()
            sid = srv.request("retrace/agent/prompt", {"text": "load the env"})["result"]["sessionId"]
            srv.wait_idle()
            time.sleep(0.5)  # the background command ends; its news goes with the next prompt
            live = check(srv, sid)
        finally:
            srv.close()
        srv2 = RawServer(ws, store, env=env, settings=AUTO, log_path=tmp_path / "s2.log")
        try:
            srv2.initialize()
            srv2.wait_idle()
            revived = check(srv2, sid)
        finally:
            srv2.close()
    finally:
        model.stop()
    outputs += [live, revived]
    # The live session had every value; after the restart only the allowlisted ones came back.
    assert live.startswith(f"NODE_ENV=production VENV={venv} REDIS=set"), live
    assert revived.startswith(f"NODE_ENV=production VENV={venv} REDIS="), revived
    assert "REDIS=set" not in revived
    assert "REDIS_URL" in revived and "left unset" in revived, revived

    haystacks: dict[str, bytes] = {}
    haystacks.update(files_under(store))
    stored = blobs_of(store)
    haystacks.update(stored)
    needles = {**needles_of, "jwt literal": f"lit{rand}", "random part": rand}
    leaks = {name: scan(haystacks, [n.encode()]) for name, n in needles.items()}
    leaks = {k: v for k, v in leaks.items() if v}
    journals = b"".join(v for k, v in haystacks.items() if k.endswith(".jsonl"))
    record_figures(
        "secrets-sourced",
        "ci",
        {
            "secretFormats": len(needles_of),
            "storeFilesScanned": len(files_under(store)),
            "blobsScannedDecompressed": len(stored),
            "bytesScanned": sum(len(v) for v in haystacks.values()),
            "redactionMarksInJournals": journals.count(b"[redacted: "),
            "leaks": leaks,
        },
    )
    assert b"[redacted: " in journals, "the outputs were journaled, redacted"
    assert leaks == {}, f"secrets stored in clear: {leaks}"
