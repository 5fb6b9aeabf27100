"""The agent harness (an in-process agent over the fake Messages API) for the metrics tests."""

from tests.agent.conftest import make_harness

__all__ = ["make_harness"]
