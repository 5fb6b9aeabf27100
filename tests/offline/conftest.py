"""Fixtures of the fake model's wire tests: fakes started from scripted responses, stopped after."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from retrace.offline import FakeModel, Scenario


@pytest.fixture
def fake_factory() -> Iterator[Any]:
    started: list[FakeModel] = []

    def make(*responses: dict[str, Any]) -> FakeModel:
        fake = FakeModel(Scenario.model_validate({"responses": list(responses)}))
        fake.start()
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.stop()
