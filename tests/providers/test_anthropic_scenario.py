"""The provider scenario through the Anthropic API's client: the reference every other
provider is compared with (tests/providers/agent_scenario.py)."""

from __future__ import annotations

from pathlib import Path

from retrace.offline.validation import validate_messages

from .agent_scenario import anthropic_outcome, assert_scenario_held


async def test_the_anthropic_client_passes_the_provider_scenario(tmp_path: Path) -> None:
    outcome = await anthropic_outcome(tmp_path)
    assert_scenario_held(outcome)
    assert [c[1] for c in outcome.checkpoints] == ["write_file", "edit_file", None]
    assert outcome.message_kinds_after_restore == ["prompt", "assistant", "restoreResults"]
    # After restoring both to the first call, the second edit never happened for the model
    # either: the next request holds the first result and the second call answered as not run.
    messages = outcome.last_request["messages"]
    validate_messages(messages)
    results = [b for b in messages[-1]["content"] if b["type"] == "tool_result"]
    assert [bool(r.get("is_error")) for r in results] == [False, True]
    assert "not run" in str(results[1]["content"])
    assert messages[-1]["content"][-1]["text"] == "what changed since the plan?"
