"""THE lifecycle of the server's features: :class:`Feature` (the hooks) and :class:`FeatureSet`
(the registered features, run in order).

A feature is something the server does beside answering requests — the remote sync, the
command line's relay, the storage metrics, the git mirror, the timeline's notifications, the
start-up chores. It hooks into five moments, each optional (the base class's hooks do nothing):

* ``start(services)`` — the first folder's services are open, before the first answer (cheap
  work only: the client is waiting);
* ``after_first_answer(services)`` — the first timeline answer was sent (or
  :data:`retrace.lsp.startup.BACKGROUND_AFTER_S` passed) and the catch-up walk ran: the work
  that would otherwise delay that answer;
* ``on_event(event)`` — every agent event, after the client was sent ``retrace/agent/event``
  (:class:`retrace.lsp.host.LspAgentHost`); the feature picks the events it cares about;
* ``on_settings(previous, current)`` — the client's settings changed (after the agent got them,
  :func:`retrace.lsp.settings.apply_settings`); the feature compares what it reads;
* ``stop(wait_s)`` — shutdown: called with the shutdown's wait on the LSP ``shutdown`` request,
  then again with ``0.0`` when the process ends (:func:`retrace.lsp.startup.shutdown`): it must
  be idempotent. Always before the engine closes.

The features are built ONCE, by the composition root (:func:`retrace.lsp.main.create_server`),
each given the server; every hook runs in the registry's order (the order is documented there,
with what depends on it). A hook that raises is logged with the feature's name and the next
feature's hook still runs: one broken feature never keeps the others (or the engine's close, or
the client's notification) from happening. Cancellation is not an error: it goes through.

Nothing here knows a particular feature: no ``isinstance`` on event types outside the features
(``tests/architecture/test_feature_dispatch.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from retrace.agent.notifications import CheckpointCreated, EventBase
    from retrace.bootstrap import Services
    from retrace.protocol.models import ServerSettings

log = logging.getLogger(__name__)


class Feature:
    """One feature's hooks (see the module); override the ones the feature needs."""

    name: ClassVar[str] = "feature"
    """Named in the log when a hook fails; unique in a :class:`FeatureSet`."""

    async def start(self, services: Services) -> None:
        """The first folder's services are open (before the first answer)."""

    async def after_first_answer(self, services: Services) -> None:
        """Start-up's background work, once the first answer was sent."""

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        """An agent event (already sent to the client)."""

    async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
        """The settings changed from ``previous`` to ``current``."""

    def stop(self, wait_s: float) -> None:
        """Shutdown: finish within ``wait_s`` seconds; idempotent."""


HOOKS = ("start", "after_first_answer", "on_event", "on_settings", "stop")


def implements(feature: Feature, hook: str) -> bool:
    """Whether ``feature`` overrides ``hook`` (the base's does nothing)."""
    return getattr(type(feature), hook) is not getattr(Feature, hook)


class FeatureSet:
    """The server's features in their order; each hook run on every feature, failures isolated."""

    def __init__(self, features: Sequence[Feature] = ()) -> None:
        names = [f.name for f in features]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"features registered twice: {', '.join(doubled)}")
        self.features: tuple[Feature, ...] = tuple(features)

    def __iter__(self) -> Iterator[Feature]:
        return iter(self.features)

    def names(self, hook: str | None = None) -> list[str]:
        """The features' names in order (``hook``: only those that implement it)."""
        return [f.name for f in self.features if hook is None or implements(f, hook)]

    async def _each(self, hook: str, call: Callable[[Feature], Awaitable[None]]) -> None:
        for feature in self.features:
            try:
                await call(feature)
            except Exception:
                log.exception("feature %s: %s failed (the other features go on)", feature.name, hook)

    async def start(self, services: Services) -> None:
        await self._each("start", lambda f: f.start(services))

    async def after_first_answer(self, services: Services) -> None:
        await self._each("after_first_answer", lambda f: f.after_first_answer(services))

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        await self._each("on_event", lambda f: f.on_event(event))

    async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
        await self._each("on_settings", lambda f: f.on_settings(previous, current))

    def stop(self, wait_s: float) -> None:
        for feature in self.features:
            try:
                feature.stop(wait_s)
            except Exception:
                log.exception("feature %s: stop failed (the other features go on)", feature.name)
