"""Crash campaign (issue 5, item 1): a long scripted agent session against the REAL server and the
fake Messages API, with the server SIGKILLed again and again and restarted on the same store.

Each server process is one *epoch* with one kill plan: a random timer (mid-turn, mid-restore), or
a kill point armed through ``killpoints/sitecustomize.py`` (torn journal append, right after a
durable commit, after a blob store mid-capture, between the file writes of a disk restore), or a
kill from inside the editor's ``workspace/applyEdit`` handler. Some epochs end with a clean
shutdown instead.

Ground truth never comes from Retrace: the editor stand-in snapshots the workspace whenever the
server is provably idle on disk — when it asks for a permission (the previous tool call is
checkpointed, the next one has not run), when a turn finishes, after a restore — and files that
snapshot under the checkpoint the server announced last. Shell commands also append their tag to
a log OUTSIDE the workspace, so a command that ran twice shows up twice.

After every kill, with the server dead: the store opens; the checkpoints in the journals (parsed
here, line by line) are exactly the engine's timeline; no checkpoint the client was told about is
missing; every snapshotted checkpoint's manifest and blobs match its snapshot byte for byte; a
restore that was under way is fully applied or fully rolled back; no tool call was started twice.
After the restart the server's timeline equals the journals again. Real restores through the
server (``force``) are compared with the snapshots too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import EditorClient, model_env, start_editor, stop_editor
from tests.oracles import entries
from tests.reliability.conftest import FULL, full_only, record_figures

from retrace.engine import Engine
from retrace.engine.restore.recovery import begin_restore, recover_interrupted_restores
from retrace.engine.store.events import RestoreDoneEvent
from retrace.engine.store.layout import StoreLayout
from retrace.offline import FakeModel
from retrace.offline.scenario import Scenario

pytestmark = [pytest.mark.e2e]

KILLPOINTS = Path(__file__).resolve().parent / "killpoints"
ASK = {"permissions": {"write": "ask", "command": "ask"}}
Tree = dict[str, tuple[str, bytes, bool]]

PLANS = ["timer", "journal", "commit", "blob", "apply", "applyEdit", "restoreTimer", "timer", "clean"]
"""Kill plans, cycled (every kind gets exercised even in the short CI variant)."""


class ServerDiedError(Exception):
    pass


def token(turn: int) -> str:
    return f"[[turn-{turn:04d}]]"


def turn_calls(t: int, ran_log: Path) -> list[dict[str, Any]]:
    """The tool calls of turn ``t``: edits, creates, deletes, renames, exec bits, binary files and
    shell commands touching many files. Every shell command first logs its tag outside the
    workspace (double execution detector)."""
    log = str(ran_log)
    calls: list[dict[str, Any]] = [
        {
            "name": "write_file",
            "input": {"path": f"src/mod{t % 15}.py", "content": f"VALUE = {t}\n" * (1 + t % 4)},
        },
        {"name": "write_file", "input": {"path": f"e/t{t % 8}.txt", "content": f"alpha {t}\nsecond line\n"}},
        {
            "name": "edit_file",
            "input": {"path": f"e/t{t % 8}.txt", "old_string": f"alpha {t}", "new_string": f"beta {t}"},
        },
        {
            "name": "run_command",
            "input": {
                "command": f"echo run-{t}-a-@@SERVE@@ >> '{log}'; mkdir -p sh; for i in 1 2 3 4 5 6; do "
                f"printf 'turn {t} file %s\\n' $i > sh/f$(( ({t} + $i) % 17 )).txt; done; "
                f"rm -f sh/f{(t * 5) % 17}.txt"
            },
        },
        {
            "name": "run_command",
            "input": {
                "command": f"echo run-{t}-b-@@SERVE@@ >> '{log}'; mkdir -p mv bin; "
                f"if [ -f mv/a{t % 5}.txt ]; then mv mv/a{t % 5}.txt mv/b{t % 5}.txt; "
                f"else printf 'moved {t}\\n' > mv/a{t % 5}.txt; fi; "
                f"head -c {200 + t % 50} /dev/urandom > bin/blob{t % 4}.bin"
            },
        },
    ]
    if t % 3 == 0:
        calls.append(
            {
                "name": "run_command",
                "input": {
                    "command": f"echo run-{t}-c-@@SERVE@@ >> '{log}'; mkdir -p many; "
                    f"for i in $(seq 1 30); do printf '{t}\\n' >> many/m$i.txt; done; "
                    f"chmod {'+x' if t % 2 else '-x'} many/m1.txt"
                },
            }
        )
    if t % 4 == 1:
        calls.append(
            {"name": "run_command", "input": {"command": f"echo run-{t}-d-@@SERVE@@ >> '{log}'; rm -rf mv"}}
        )
    if t % 5 == 2:
        calls.append({"name": "read_file", "input": {"path": "README.md"}})
    return calls


def scenario(turns: int, ran_log: Path) -> Scenario:
    responses: list[dict[str, Any]] = []
    for t in range(turns):
        match = {"lastUserTextContains": token(t)}
        responses.append({"match": match, "text": f"Working on {t}.", "toolCalls": turn_calls(t, ran_log)})
        responses.append({"match": {**match, "lastToolResultContains": ""}, "text": f"Done with {t}."})
    return Scenario.model_validate({"name": "crash-campaign", "responses": responses})


def number_servings(model: FakeModel) -> None:
    """Stamp every served reply's commands with a serving number (``@@SERVE@@``): a turn's reply
    legitimately served again (its prompt was never answered before a kill) logs a new tag, while
    one tool call executed twice logs the same tag twice."""
    script = model._script
    original = script.next
    servings = iter(range(1, 1_000_000))

    def next_reply(body: dict[str, Any]) -> Any:
        response, status = original(body)
        if response.tool_calls and status is None:
            serial = str(next(servings))
            calls = [
                call.model_copy(
                    update={"input": json.loads(json.dumps(call.input).replace("@@SERVE@@", serial))}
                )
                for call in response.tool_calls
            ]
            response = response.model_copy(update={"tool_calls": calls})
        return response, status

    script.next = next_reply  # type: ignore[method-assign]


def journal_checkpoints(store: Path) -> tuple[list[str], Counter[str], Counter[str]]:
    """Parsed here, independently of the engine: checkpoint ids, toolCallIntent ids, and results
    by status. A torn LAST line is the only line allowed to be unreadable."""
    layout = StoreLayout(store)
    ids: list[str] = []
    intents: Counter[str] = Counter()
    results: Counter[str] = Counter()
    for sid in layout.session_ids():
        lines = layout.journal(sid).read_bytes().split(b"\n")
        for index, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                assert index == len(lines) - 1, f"corrupt journal line {index + 1} in session {sid}"
                continue
            if event["type"] == "checkpoint":
                ids.append(event["checkpoint"]["id"])
            elif event["type"] == "toolCallIntent":
                intents[event["id"]] += 1
            elif event["type"] == "toolCallResult":
                results[event["status"]] += 1
    return ids, intents, results


@dataclass
class PendingRestore:
    pre: Tree
    expected: Tree


@dataclass
class Campaign:
    root: Path
    rng: random.Random
    target_calls: int
    target_kills: int
    budget_s: float
    turns: int = 600
    ws: Path = field(init=False)
    store: Path = field(init=False)
    ran_log: Path = field(init=False)
    truth: dict[str, Tree] = field(default_factory=dict)
    verified: set[str] = field(default_factory=set)
    announced: set[str] = field(default_factory=set)
    """Checkpoint ids the client was told about (events, restore results): must never vanish."""
    started: Counter[str] = field(default_factory=Counter)
    last_cp: str | None = None
    next_turn: int = 0
    session_id: str | None = None
    pending_restore: PendingRestore | None = None
    kills: Counter[str] = field(default_factory=Counter)
    figures: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ws = self.root / "ws"
        self.store = self.root / "store"
        self.ran_log = self.root / "ran.log"
        (self.ws / "src").mkdir(parents=True)
        (self.ws / "README.md").write_text("# crash campaign\n", "utf-8")
        for i in range(15):
            (self.ws / "src" / f"mod{i}.py").write_text(f"VALUE = -{i}\n", "utf-8")
        (self.ws / "logo.bin").write_bytes(bytes(range(256)) * 4)
        (self.ws / "link.py").symlink_to("src/mod0.py")
        self.ran_log.write_text("", "utf-8")

    # ------------------------------------------------------------------ observation hooks
    def observe(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "checkpointCreated":
            self.last_cp = event["checkpoint"]["id"]
            self.announced.add(event["checkpoint"]["id"])
        elif kind == "toolCallStarted":
            self.started[event["toolCallId"]] += 1
        elif kind in ("permissionRequest", "turnFinished"):
            self.snapshot()

    def snapshot(self) -> None:
        """The disk now is the state of the last announced checkpoint (the server is idle on disk)."""
        if self.last_cp is not None and self.last_cp not in self.truth:
            self.truth[self.last_cp] = entries(self.ws)

    # ------------------------------------------------------------------ one server process
    async def epoch(self, index: int, model: FakeModel) -> None:
        plan = PLANS[index % len(PLANS)]
        env = {**model_env(model), "PYTHONPATH": str(KILLPOINTS)}
        if plan in ("journal", "commit"):
            env["RETRACE_KILLPOINT"] = f"{plan}:{self.rng.randint(1, 30)}"
        elif plan == "blob":
            env["RETRACE_KILLPOINT"] = f"blob:{self.rng.randint(1, 40)}"
        elif plan == "apply":
            env["RETRACE_KILLPOINT"] = f"apply:{self.rng.randint(1, 4)}"
        headless = plan == "apply" or (plan == "restoreTimer" and index % 2 == 0)
        editor = await start_editor(self.ws, self.store, env=env, settings=ASK, apply_edit=not headless)
        proc = editor.client._server
        assert proc is not None
        died = False
        killed: list[str] = []

        def kill(reason: str) -> None:
            if proc.returncode is None:
                self.kills[reason] += 1
                killed.append(reason)
                os.kill(proc.pid, signal.SIGKILL)

        hooked_events = _Hooked(self.observe)
        hooked_events.extend(editor.events)
        editor.events = hooked_events

        def on_apply_edit(_params: object) -> None:
            if plan == "applyEdit":
                if self.rng.random() < 0.5:
                    editor.refuse_edits = "the window was closed"  # the editor dies too: nothing applied
                kill("applyEdit")

        editor.applied_edits = _Hooked(on_apply_edit)

        def on_timeline(change: dict[str, Any]) -> None:
            if change.get("checkpoint"):
                self.last_cp = change["checkpoint"]["id"]
                self.announced.add(self.last_cp)

        editor.timeline_changes = _Hooked(on_timeline)
        timer: asyncio.Task[None] | None = None
        try:
            await self.guarded(proc, self.check_server_agrees(editor))
            if plan == "timer":
                timer = asyncio.ensure_future(self.kill_after(self.rng.uniform(0.05, 2.0), kill, "timer"))
            restore_turn = (
                1 if plan in ("apply", "applyEdit", "restoreTimer") else self.rng.choice([2, 3, None])
            )
            for step in range(4):
                if step == restore_turn:
                    await self.restore(editor, proc, kill if plan == "restoreTimer" else None)
                await self.guarded(proc, self.turn(editor))
            if env.get("RETRACE_KILLPOINT") or plan in ("applyEdit", "restoreTimer", "timer"):
                # The armed kill never fired: kill at a random instant of one more turn instead.
                timer = asyncio.ensure_future(self.kill_after(self.rng.uniform(0.0, 0.6), kill, "timer"))
                await self.guarded(proc, self.turn(editor))
                await self.guarded(proc, self.turn(editor))
        except ServerDiedError:
            died = True
        finally:
            if timer is not None:
                timer.cancel()
        # A timer's kill can land just as the last call answered: the server is dead all the same
        # (a clean shutdown of it would fail), so this epoch ends as a crash.
        died = died or bool(killed)
        if died:
            if env.get("RETRACE_KILLPOINT"):
                self.kills[env["RETRACE_KILLPOINT"].split(":")[0]] += 1
            await asyncio.sleep(0.3)  # commands the dead server started finish (they are orphans now)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(editor.client.stop(), 5)
            self.figures["restarts"] += 1
        else:
            await stop_editor(editor)
            self.figures["cleanShutdowns"] += 1
        self.verify_dead_store()

    async def kill_after(self, delay: float, kill: Any, reason: str) -> None:
        await asyncio.sleep(delay)
        kill(reason)

    async def guarded(self, proc: asyncio.subprocess.Process, coro: Any, limit_s: float = 60.0) -> Any:
        """Run ``coro`` unless the server dies first (then :class:`ServerDiedError`)."""
        task = asyncio.ensure_future(coro)
        dead = asyncio.ensure_future(proc.wait())
        done, _ = await asyncio.wait({task, dead}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            dead.cancel()
            error = task.exception()
            if error is None:
                return task.result()
            # pytest-lsp fails pending requests when the server process exits.
            if isinstance(error, RuntimeError) and "exited" in str(error):
                raise ServerDiedError from error
            raise error
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if dead in done:
            raise ServerDiedError
        dead.cancel()
        raise AssertionError("the server neither answered nor died within the time limit")

    async def turn(self, editor: EditorClient) -> None:
        t = self.next_turn
        self.next_turn += 1
        assert t < self.turns, "scenario exhausted"
        params: dict[str, Any] = {"text": f"please do {token(t)}"}
        if self.session_id is not None:
            params["sessionId"] = self.session_id
        result = await editor.request("retrace/agent/prompt", params)
        self.session_id = result["sessionId"]
        await editor.wait_for_event(
            lambda e: e["kind"] == "turnFinished" and e.get("turnId") == result["turnId"], limit_s=60
        )
        self.figures["turnsFinished"] += 1

    async def check_server_agrees(self, editor: EditorClient) -> None:
        """After a (re)start: the store opened and the server's timeline IS the journals."""
        timeline = await editor.request("retrace/timeline/get", {})
        ids, _, _ = journal_checkpoints(self.store)
        served = [cp["id"] for cp in timeline["checkpoints"]]
        if sorted(served) != sorted(ids):
            self.failures.append(f"server timeline != journals after restart: {set(served) ^ set(ids)}")
        if timeline["checkpoints"]:
            self.last_cp = timeline["head"]
        self.figures["restartsChecked"] += 1
        self.classify_interrupted_restore()

    async def restore(self, editor: EditorClient, proc: asyncio.subprocess.Process, kill: Any) -> None:
        """Restore a random snapshotted checkpoint (force) and compare the disk with the snapshot."""
        targets = sorted(self.truth)
        if not targets:
            return
        target = self.rng.choice(targets)
        mode = self.rng.choice(["code", "code", "both"])
        pre = entries(self.ws)
        dry = await self.guarded(
            proc,
            editor.request(
                "retrace/checkpoint/restore", {"id": target, "mode": mode, "dryRun": True, "force": True}
            ),
        )
        plan = dry["outcome"].get("plan")
        if dry["outcome"]["kind"] != "preview" or plan is None:
            return
        want = self.truth[target]
        expected = dict(pre)
        for planned in plan["files"]:
            if planned.get("fromPath"):
                expected.pop(planned["fromPath"], None)
            if planned["path"] in want:
                expected[planned["path"]] = want[planned["path"]]
            else:
                expected.pop(planned["path"], None)
        self.pending_restore = PendingRestore(pre=pre, expected=expected)
        timer = None
        if kill is not None:
            timer = asyncio.ensure_future(self.kill_after(self.rng.uniform(0.0, 0.08), kill, "restoreTimer"))
        try:
            result = await self.guarded(
                proc,
                editor.request("retrace/checkpoint/restore", {"id": target, "mode": mode, "force": True}),
            )
        finally:
            if timer is not None and not timer.done():
                timer.cancel()
        self.pending_restore = None
        outcome = result["outcome"]
        if outcome["kind"] != "applied":
            self.failures.append(
                f"restore of {target} ({mode}) was {outcome['kind']}: {outcome.get('error')}"
            )
            return
        now = entries(self.ws)
        if now != expected:
            self.failures.append(f"restore of {target} is not byte-exact: {_diff(now, expected)}")
            return
        self.figures["restoresVerified"] += 1
        self.announced.add(outcome["checkpoint"]["id"])
        self.last_cp = outcome["checkpoint"]["id"]
        self.truth[self.last_cp] = now

    # ------------------------------------------------------------------ checks with the server dead
    def classify_interrupted_restore(self) -> None:
        """Once the restarted server is serving (its crash recovery has run), a restore the kill
        interrupted must be fully applied or fully rolled back."""
        pending = self.pending_restore
        if pending is None:
            return
        self.pending_restore = None
        now = entries(self.ws)
        if now == pending.expected:
            self.figures["interruptedRestoresFullyApplied"] += 1
        elif now == pending.pre:
            self.figures["interruptedRestoresRolledBack"] += 1
        else:
            self.figures["interruptedRestoresHalfApplied"] += 1
            self.failures.append(
                f"interrupted restore left half applied: {_diff(now, pending.expected)} "
                f"vs pre {_diff(now, pending.pre)}"
            )

    def verify_dead_store(self) -> None:
        if self.pending_restore is not None:
            now = entries(self.ws)
            if now not in (self.pending_restore.pre, self.pending_restore.expected):
                self.figures["interruptedRestoresHalfAppliedAtKill"] += 1
        ids, intents, results = journal_checkpoints(self.store)
        eng = Engine.open(self.ws, self.store, readonly=True)
        try:
            if eng.problems:
                self.failures.append(f"store problems after a kill: {eng.problems}")
            engine_ids = [cp.id for cp in eng.timeline()]
            if sorted(engine_ids) != sorted(ids):
                self.failures.append(f"engine index != journals: {set(engine_ids) ^ set(ids)}")
            lost = self.announced - set(engine_ids)
            if lost:
                self.failures.append(f"completed checkpoints lost: {sorted(lost)}")
            fresh = [cid for cid in self.truth if cid not in self.verified]
            old = sorted(self.verified)
            for cid in fresh + self.rng.sample(old, min(5, len(old))):
                self.check_checkpoint(eng, cid)
        finally:
            eng.close()
        twice = [cid for cid, n in intents.items() if n > 1] + [
            cid for cid, n in self.started.items() if n > 1
        ]
        if twice:
            self.failures.append(f"tool calls started twice: {twice}")
        ran = Counter(line for line in self.ran_log.read_text("utf-8").splitlines() if line)
        if any(n > 1 for n in ran.values()):
            self.failures.append(f"shell commands ran twice: {[k for k, n in ran.items() if n > 1]}")
        self.figures["toolCallsCompleted"] = results["ok"] + results["error"]
        self.figures["toolCallsInterrupted"] = results["interrupted"]
        self.figures["shellCommandsRun"] = len(ran)
        self.figures["checkpoints"] = len(ids)

    def check_checkpoint(self, eng: Engine, cid: str) -> None:
        want = self.truth[cid]
        # The full manifest of one checkpoint (the engine's own rebuild).
        manifest = eng.manifest(cid)
        problems = []
        if set(manifest) != set(want):
            problems.append(f"paths differ: {sorted(set(manifest) ^ set(want))}")
        for rel, entry in manifest.items():
            if rel not in want:
                continue
            kind, data, executable = want[rel]
            if entry.kind != kind:
                problems.append(f"{rel}: {entry.kind} != {kind}")
            elif kind == "symlink":
                if os.fsencode(entry.target or "") != data:
                    problems.append(f"{rel}: link target differs")
            elif eng.file_content(cid, rel) != data or entry.executable != executable:
                problems.append(f"{rel}: bytes or exec bit differ")
        if problems:
            self.failures.append(f"checkpoint {cid} is not byte-exact: {problems[:5]}")
        else:
            self.figures["checkpointVerifications"] += 1
            self.verified.add(cid)

    # ------------------------------------------------------------------ the campaign
    async def run(self) -> dict[str, Any]:
        model = FakeModel(scenario(self.turns, self.ran_log))
        number_servings(model)
        model.start()
        started = time.monotonic()
        try:
            index = 0
            while (
                self.figures["toolCallsCompleted"] < self.target_calls
                or sum(self.kills.values()) < self.target_kills
            ):
                assert time.monotonic() - started < self.budget_s, (
                    f"campaign budget exhausted: {dict(self.figures)} kills {dict(self.kills)}"
                )
                await self.epoch(index, model)
                index += 1
            # A last clean start: the resumed session still works after all the kills.
            editor = await start_editor(self.ws, self.store, env=model_env(model), settings=ASK)
            try:
                await self.check_server_agrees(editor)
                await self.turn(editor)
                await self.restore(editor, editor.client._server, None)  # type: ignore[arg-type]
            finally:
                await stop_editor(editor)
            self.verify_dead_store()
        finally:
            model.stop()
        return {
            "kills": sum(self.kills.values()),
            "killsByKind": dict(self.kills),
            "snapshottedCheckpoints": len(self.truth),
            "seconds": round(time.monotonic() - started, 1),
            "lostCheckpoints": sum("lost" in f for f in self.failures),
            "failures": self.failures,
            **dict(self.figures),
        }


class _Hooked(list[Any]):
    """A list that calls ``hook`` on every append (the editor stand-in appends as messages arrive)."""

    def __init__(self, hook: Any) -> None:
        super().__init__()
        self.hook = hook

    def append(self, item: Any) -> None:
        super().append(item)
        self.hook(item)


def _diff(a: Tree, b: Tree) -> str:
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return f"{len(keys)} path(s) differ: {keys[:6]}"


async def _campaign(tmp_path: Path, variant: str, calls: int, kills: int, budget_s: float, seed: int) -> None:
    campaign = Campaign(tmp_path, random.Random(seed), calls, kills, budget_s)
    figures = await campaign.run()
    record_figures(
        "crash", variant, {"seed": seed, "targetToolCalls": calls, "targetKills": kills, **figures}
    )
    assert figures["failures"] == [], "\n".join(figures["failures"])
    assert figures["toolCallsCompleted"] >= calls
    assert figures["kills"] >= kills
    assert figures["checkpointVerifications"] > 0 and figures["restoresVerified"] > 0


@pytest.mark.timeout(240)
@pytest.mark.skipif(FULL, reason="the full variant runs instead")
async def test_crash_campaign_ci(tmp_path: Path) -> None:
    await _campaign(tmp_path, "ci", calls=45, kills=10, budget_s=150, seed=20261130)


@pytest.mark.slow
@full_only
@pytest.mark.timeout(1800)
async def test_crash_campaign_full(tmp_path: Path) -> None:
    await _campaign(tmp_path, "full", calls=220, kills=55, budget_s=1500, seed=int(time.time()))


HEADLESS_RESTORE = """
import sys
from pathlib import Path
from retrace.engine import Engine

ws, store = Path(sys.argv[1]), Path(sys.argv[2])
eng = Engine.open(ws, store)
for i in range(6):
    (ws / f"f{i}.txt").write_text(f"v2 {i}\\n")
v2 = eng.checkpoint(label="v2")
print(v2.id, flush=True)
eng.restore(eng.timeline()[0].id)  # the kill point fires between its file writes
print("not killed", flush=True)
"""


def test_headless_engine_restore_killed_mid_apply_is_all_or_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(6):
        (ws / f"f{i}.txt").write_text(f"v1 {i}\n")
    before = entries(ws)
    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": str(KILLPOINTS), "RETRACE_KILLPOINT": "apply:3"}
    done = subprocess.run(
        [sys.executable, "-c", HEADLESS_RESTORE, str(ws), str(store)],
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    after_v2 = {rel: ("file", f"v2 {rel[1]}\n".encode(), False) for rel in before}
    with Engine.open(ws, store):
        now = entries(ws)
    assert now in (before, after_v2), f"half applied: {_diff(now, before)}"


def _engine_with_two_states(tmp_path: Path) -> tuple[Path, Path, str, Tree, Tree]:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = tmp_path / "store"
    for i in range(4):
        (ws / f"f{i}.txt").write_text(f"v1 {i}\n")
    with Engine.open(ws, store) as engine:
        v1 = engine.head.id
        old = entries(ws)
        for i in range(4):
            (ws / f"f{i}.txt").write_text(f"v2 {i}\n")
        engine.checkpoint(label="v2")
    return ws, store, v1, old, entries(ws)


def test_recovery_rolls_back_an_unfinished_restore(tmp_path: Path) -> None:
    """The engine's restore recovery on its own: an intent, half the files written, a crash."""
    ws, store, v1, _old, new = _engine_with_two_states(tmp_path)
    with Engine.open(ws, store) as engine:
        plan = engine.plan_restore(v1)
        begin_restore(engine, plan)
    (ws / "f0.txt").write_text("v1 0\n")  # the "crash" came after two of four files
    (ws / "f1.txt").write_text("v1 1\n")
    (ws / ".retrace-1-abcd-f2.txt.tmp").write_text("half")
    (ws / ".rt-0123abcd.tmp").write_text("half")
    with Engine.open(ws, store) as engine:  # a writer's open recovers by itself
        report = engine.recovered
        assert len(report) == 1 and "rolled back" in report[0], report
        assert entries(ws) == new
        assert recover_interrupted_restores(engine) == [], "recovery is not idempotent"


def test_recovery_keeps_a_restore_committed_before_the_crash(tmp_path: Path) -> None:
    ws, store, v1, old, _new = _engine_with_two_states(tmp_path)
    with Engine.open(ws, store) as engine:
        begin_restore(engine, engine.plan_restore(v1))
        assert engine.restore(v1).kind == "applied"  # committed; the crash came before restoreDone
    with Engine.open(ws, store) as engine:
        assert engine.recovered == []
        assert recover_interrupted_restores(engine) == []
        assert entries(ws) == old
        assert any(isinstance(e, RestoreDoneEvent) for sid in engine.sessions() for e in engine.events(sid))
