"""The features' lifecycle (:mod:`retrace.lsp.feature_lifecycle`): the registry the composition
root builds, the order each hook runs in, and one feature's failure isolated from the others.

Before the lifecycle, a hook that raised stopped every step after it: a failed remote call kept
the timeline's ``didChange`` from the client and failed the agent's ``emit``; a failing stop at
shutdown kept the engine (and its lock) open. Now it is logged with the feature's name and the
next feature still runs; cancellation still goes through."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import pytest

from retrace.agent.notifications import CheckpointCreated, EventBase, TurnFinished, TurnStarted
from retrace.engine.models import Checkpoint
from retrace.lsp import feature_lifecycle, startup
from retrace.lsp.feature_lifecycle import HOOKS, Feature, FeatureSet
from retrace.lsp.host import LspAgentHost
from retrace.lsp.main import create_server, features, folder_features
from retrace.lsp.rpc import FOLDER
from retrace.lsp.settings import apply_settings
from retrace.protocol.models import ServerSettings

if TYPE_CHECKING:
    from retrace.lsp.services.remote import ServerRemote

# What the server's own hooks did before the lifecycle, feature by feature, in the order they
# did it (the host's ladder, apply_settings' branches, start_services / after_first_answer,
# shutdown): the registry must reproduce it.
ORDER = [
    ("start", ["remote", "relay", "metrics"]),
    ("after_first_answer", ["integrations", "store_health", "metrics", "warm_sdk", "auto_gc"]),
    ("on_event", ["remote", "git_mirror", "metrics", "timeline"]),
    ("on_settings", ["remote", "engine_settings", "metrics"]),
    ("stop", ["remote", "relay", "metrics"]),
]


@pytest.mark.parametrize(("hook", "names"), ORDER)
def test_the_registry_runs_each_hook_in_the_documented_order(hook: str, names: list[str]) -> None:
    assert create_server().features.names(hook) == names


def test_every_hook_is_in_the_table() -> None:
    assert [hook for hook, _ in ORDER] == list(HOOKS)


def test_a_feature_is_registered_once() -> None:
    server = create_server()
    with pytest.raises(ValueError, match="registered twice: remote"):
        FeatureSet([*features(server), features(server)[0]])


class Recorder(Feature):
    """Records each hook it receives into a shared log; ``fails``: those hooks raise."""

    def __init__(self, name: str, log: list[str], fails: frozenset[str] = frozenset()) -> None:
        self.label, self.log, self.fails = name, log, fails

    def _hit(self, hook: str) -> None:
        self.log.append(f"{self.label}.{hook}")
        if hook in self.fails:
            raise RuntimeError(f"{self.label} broke in {hook}")

    async def start(self, services: Any) -> None:
        self._hit("start")

    async def after_first_answer(self, services: Any) -> None:
        await asyncio.sleep(0)  # a real suspension between features
        self._hit("after_first_answer")

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        self._hit("on_event")

    async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
        self._hit("on_settings")

    def stop(self, wait_s: float) -> None:
        self._hit("stop")


def recorder(name: str, log: list[str], fails: frozenset[str] = frozenset()) -> Recorder:
    """A :class:`Recorder` whose class is named ``name`` (a feature's name is its class's)."""
    made: Recorder = type(f"Recorder_{name}", (Recorder,), {"name": name})(name, log, fails)
    return made


def recorders(log: list[str], broken: str | None = None, hook: str = "") -> FeatureSet:
    """Features ``a``, ``b``, ``c`` in that order; ``broken`` raises in ``hook``."""
    return FeatureSet([recorder(n, log, frozenset({hook}) if n == broken else frozenset()) for n in "abc"])


async def run_hook(features: FeatureSet, hook: str) -> None:
    event = TurnStarted(session_id="ses_1", text="hi")
    calls = {
        "start": lambda: features.start(None),  # type: ignore[arg-type]
        "after_first_answer": lambda: features.after_first_answer(None),  # type: ignore[arg-type]
        "on_event": lambda: features.on_event(event),
        "on_settings": lambda: features.on_settings(ServerSettings(), ServerSettings()),
    }
    if hook == "stop":
        features.stop(0.0)
    else:
        await calls[hook]()


# (hook, the feature that raises or None) → what ran, in order
ISOLATION = [(hook, broken) for hook in HOOKS for broken in (None, "a", "b", "c")]


@pytest.mark.parametrize(("hook", "broken"), ISOLATION)
async def test_a_failing_hook_is_logged_and_the_others_still_run(
    hook: str, broken: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[str] = []
    with caplog.at_level(logging.ERROR, logger=feature_lifecycle.__name__):
        await run_hook(recorders(log, broken, hook), hook)
    assert log == [f"a.{hook}", f"b.{hook}", f"c.{hook}"]
    failures = [r for r in caplog.records if r.name == feature_lifecycle.__name__]
    if broken is None:
        assert failures == []
    else:
        assert len(failures) == 1
        assert f"feature {broken}: {hook} failed" in failures[0].getMessage()
        assert failures[0].exc_info is not None  # the traceback is in the log


async def test_cancellation_is_not_swallowed() -> None:
    class Cancelled(Feature):
        name = "cancelled"

        async def on_event(self, event: CheckpointCreated | EventBase) -> None:
            raise asyncio.CancelledError

    log: list[str] = []
    later = recorder("later", log)
    with pytest.raises(asyncio.CancelledError):
        await FeatureSet([Cancelled(), later]).on_event(TurnStarted(session_id="s", text="x"))
    assert log == []


def test_the_base_feature_does_nothing() -> None:
    base = Feature()
    assert all(
        asyncio.run(getattr(base, h)(None)) is None for h in ("start", "after_first_answer", "on_event")
    )
    assert asyncio.run(base.on_settings(ServerSettings(), ServerSettings())) is None
    base.stop(1.0)  # nothing to stop


# ---------------------------------------------------------------- through the server's own paths


class Sent:
    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def __call__(self, method: str, payload: Any = None) -> None:
        self.items.append((method, payload))


async def test_the_host_sends_the_event_then_runs_every_feature_despite_one_failing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = create_server()
    log: list[str] = []
    server.features = recorders(log, "a", "on_event")
    sent = Sent()
    monkeypatch.setattr(server, "send_notification", sent)
    await LspAgentHost(server).emit(TurnFinished(session_id="ses_1", stop_reason="end_turn"))
    assert [m for m, _ in sent.items] == ["retrace/agent/event"]
    assert log == ["a.on_event", "b.on_event", "c.on_event"]


async def test_settings_reach_every_feature_with_previous_and_current() -> None:
    server = create_server()
    seen: list[tuple[int, int]] = []

    class Watch(Feature):
        name = "watch"

        async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
            seen.append((previous.max_tokens, current.max_tokens))

    server.features = FeatureSet([Watch()])
    before = server.settings.max_tokens
    await apply_settings(server, ServerSettings.model_validate({"maxTokens": before + 1}))
    assert seen == [(before, before + 1)]


def test_shutdown_stops_every_feature_even_when_one_fails() -> None:
    server = create_server()
    log: list[str] = []
    server.features = recorders(log, "b", "stop")
    startup.shutdown(server)
    startup.shutdown(server)  # idempotent: stop may be called again
    assert log == ["a.stop", "b.stop", "c.stop"] * 2


class FakeRemote:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def checkpoint_created(self) -> None:
        self.log.append("remote: push scheduled")

    def turn_ended(self) -> None:
        self.log.append("remote: push requested")


class FakeMetrics:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def checkpoint_created(self) -> None:
        self.log.append("metrics: checkpoint counted")

    def schedule_check(self) -> None:
        self.log.append("metrics: storage measured")


def checkpoint() -> Checkpoint:
    return Checkpoint(
        id="cp_1", parent=None, session_id="ses_1", kind="tool", created_at=datetime.now(UTC), tool="write"
    )


# event, services open? → what the real features did, in order (the host's old ladder)
EVENTS = [
    (
        CheckpointCreated(session_id="ses_1", checkpoint=checkpoint()),
        False,
        ["remote: push scheduled", "metrics: checkpoint counted", "client: retrace/timeline/didChange"],
    ),
    (TurnFinished(session_id="ses_1", stop_reason="end_turn"), False, ["remote: push requested"]),
    (
        TurnFinished(session_id="ses_1", stop_reason="end_turn"),
        True,
        ["remote: push requested", "metrics: storage measured"],
    ),
    (TurnStarted(session_id="ses_1", text="hi"), False, []),
]


@pytest.mark.parametrize(("event", "ready", "expected"), EVENTS)
async def test_the_real_features_react_to_events_as_the_host_did(
    event: EventBase, ready: bool, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = create_server()
    log: list[str] = []
    server.remote = FakeRemote(log)  # type: ignore[assignment]
    server.metrics = FakeMetrics(log)  # type: ignore[assignment]
    monkeypatch.setattr(server, "send_notification", lambda m, _p=None: log.append(f"client: {m}"))
    monkeypatch.setattr(server, "services_if_ready", lambda: object() if ready else None)
    await server.features.on_event(event)
    assert log == expected


# A further folder of a multi-root workspace: its own features, one set per folder, from the same
# composition root; they stop in this order (the relay first: no command-line call reaches the
# folder's engine while it closes; the remote last, with the wait, pushing what is pending).
FOLDER_ORDER = [
    ("start", ["relay", "auto_gc", "remote"]),
    ("on_event", ["remote"]),
    ("stop", ["relay", "auto_gc", "remote"]),
]


@pytest.mark.parametrize(("hook", "names"), FOLDER_ORDER)
def test_a_further_folder_has_its_own_features_in_the_documented_order(hook: str, names: list[str]) -> None:
    server = create_server()
    folder = FeatureSet(folder_features(server, "/ws/api", cast("ServerRemote", StoppingRemote([]))))
    assert folder.names(hook) == names


class StoppingRemote:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def checkpoint_created(self) -> None:
        self.log.append("api remote: push scheduled")

    def stop(self, wait_s: float) -> None:
        self.log.append(f"remote: stopped within {wait_s}s")


def test_stopping_a_further_folder_stops_its_remote_with_the_wait_once() -> None:
    server = create_server()
    log: list[str] = []
    remote = cast("ServerRemote", StoppingRemote(log))
    server.folder_remotes["/ws/api"] = remote
    folder = FeatureSet(folder_features(server, "/ws/api", remote))
    folder.stop(2.5)
    folder.stop(0.0)  # idempotent: shutdown may stop it again
    assert log == ["remote: stopped within 2.5s"]
    assert "/ws/api" not in server.folder_remotes  # requests for it no longer reach it


async def test_a_further_folders_checkpoint_counts_for_its_own_remote_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A checkpoint relayed from the api folder's command line (FOLDER set) schedules the api
    # folder's push, not the first folder's; the client still hears it (the timeline).
    server = create_server()
    log: list[str] = []
    server.remote = FakeRemote(log)  # type: ignore[assignment]
    server.metrics = FakeMetrics(log)  # type: ignore[assignment]
    server.folder_features["/ws/api"] = FeatureSet(
        folder_features(server, "/ws/api", cast("ServerRemote", StoppingRemote(log)))
    )
    monkeypatch.setattr(server, "send_notification", lambda m, _p=None: log.append(f"client: {m}"))
    monkeypatch.setattr(server, "services_if_ready", lambda: None)
    event = CheckpointCreated(session_id="cli", checkpoint=checkpoint())
    token = FOLDER.set("/ws/api")
    try:
        await LspAgentHost(server).emit(event)
    finally:
        FOLDER.reset(token)
    assert "remote: push scheduled" not in log
    assert log.count("api remote: push scheduled") == 1
    assert "client: retrace/timeline/didChange" in log
    log.clear()
    await LspAgentHost(server).emit(event)  # the first folder's own: its remote, not api's
    assert "remote: push scheduled" in log and "api remote: push scheduled" not in log
