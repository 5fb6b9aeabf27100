"""Metrics over a real server process with the fake Messages API: after a scripted session (two
turns, a restore with a reason) ``retrace/metrics/get`` says what happened, the CLI beside the
running server says the same, storage alerts fire once per crossing of 80 % / 90 % of a small
budget, and the opt-in scrape endpoint serves on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.cli import cli_support
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor, wait_until
from tests.net_support import free_port

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RETRACE = Path(sys.executable).with_name("retrace")


def cli_json(workspace: Path, store: Path, *args: str) -> Any:
    cmd = [str(RETRACE), *args, "--json", "--workspace", str(workspace), "--store", str(store)]
    proc = cli_support.run(cmd, dict(os.environ), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def sample_total(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


async def test_metrics_after_a_scripted_session(editor: EditorClient, workspace: Path, store: Path) -> None:
    first = await editor.run_turn("first task")
    sid = first["sessionId"]
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", first["turnId"])]
    second = await editor.run_turn("second task", session_id=sid)
    assert len(created) == 3 and len(editor.events_of("checkpointCreated", second["turnId"])) == 1

    t0 = time.perf_counter()
    result = await editor.request("retrace/checkpoint/restore", {"id": created[0]["id"], "mode": "code"})
    wall_s = time.perf_counter() - t0
    outcome = result["outcome"]
    assert outcome["kind"] == "applied"
    restore_cp = outcome["checkpoint"]["id"]
    recorded = await editor.request(
        "retrace/restore/reason", {"checkpointId": restore_cp, "reason": "wrongApproach", "mode": "code"}
    )
    assert recorded == {"checkpointId": restore_cp, "reason": "wrongApproach"}
    error = await editor.request_error("retrace/restore/reason", {"checkpointId": restore_cp, "reason": "x"})
    assert "reason" in str(error)

    snap = await editor.request("retrace/metrics/get", {})
    log = cli_json(workspace, store, "log")
    by_kind: dict[str, int] = {}
    for cp in log:
        by_kind[cp["kind"]] = by_kind.get(cp["kind"], 0) + 1
    assert by_kind["tool"] == 4 and by_kind["restore"] == 1
    assert snap["checkpoints"] == {
        "attempts": len(log),
        "successes": len(log),
        "failures": 0,
        "successRatio": 1.0,
        "byKind": by_kind,
    }
    # Latencies are the recorded samples: every checkpoint's capture time, the restore's duration
    # (measured inside the request the client timed).
    assert sorted(snap["captureSeconds"]) == pytest.approx(
        sorted(cp["captureMs"] / 1000 for cp in log if cp["kind"] != "baseline")
    )
    [restore_s] = snap["restoreSeconds"]
    assert 0 < restore_s <= wall_s
    assert snap["restoresByMode"] == {"code": 1}
    assert snap["restoresByReason"] == {"wrongApproach": 1}
    assert sorted(snap["checkpointsPerTurn"]) == [1, 3]
    assert snap["storage"]["alert"] == "ok" and snap["storage"]["usedBytes"] > 0
    assert snap["storage"]["series"] and snap["storage"]["byKind"]["journals"] > 0

    text = snap["text"]
    assert sample_total(text, "retrace_checkpoints_total", kind="tool", session=sid) == 4
    assert sample_total(text, "retrace_restores_total", reason="wrongApproach", mode="code") == 1
    assert sample_total(text, "retrace_restore_duration_seconds_count") == 1
    # The restore counts in every cumulative bucket at or above its measured duration, and in no
    # other (the duration itself is machine noise: speed lives in bench/, not here).
    buckets = {
        sample.labels["le"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "retrace_restore_duration_seconds_bucket"
    }
    assert len(buckets) > 3 and "+Inf" in buckets
    assert buckets == {le: float(restore_s <= float(le)) for le in buckets}
    assert sample_total(text, "retrace_capture_duration_seconds_count") == len(snap["captureSeconds"])

    # The CLI beside the running server (no lock taken) says the same.
    cli = cli_json(workspace, store, "metrics")
    for key in ("checkpoints", "captureSeconds", "restoreSeconds", "restoresByMode", "restoresByReason"):
        assert cli[key] == snap[key], key
    assert cli["checkpointsPerTurn"] == snap["checkpointsPerTurn"]

    # The health view draws the same numbers.
    health = await editor.request("retrace/health/get", {})
    assert not health["empty"]
    success = {
        k: health["success"][k] for k in ("attempts", "failures", "ratio", "target", "met", "valueText")
    }
    assert success == {
        "attempts": len(log),
        "failures": 0,
        "ratio": 1.0,
        "target": 0.999,
        "met": True,
        "valueText": "100 %",
    }
    assert health["restore"]["samples"] == 1 and sum(b["count"] for b in health["restore"]["buckets"]) == 1
    assert health["restore"]["p95Seconds"] == pytest.approx(restore_s)
    assert sum(b["count"] for b in health["capture"]["buckets"]) == len(snap["captureSeconds"])
    assert [(r["key"], r["count"]) for r in health["restoresByReason"] if r["count"]] == [
        ("wrongApproach", 1)
    ]
    assert {r["checkpointId"] for r in health["slowest"]} <= {cp["id"] for cp in log}
    assert health["storage"]["warningBytes"] == int(0.8 * health["storage"]["budgetBytes"])

    # The status bar's figures are the same fold's (one stats pipeline).
    stats = await editor.request("retrace/stats", {})
    assert stats["store"]["checkpoints"] == health["success"]["attempts"] == len(log)
    assert stats["store"]["capture"]["count"] == len(snap["captureSeconds"])
    assert (stats["store"]["restores"], stats["store"]["restoresSucceeded"], stats["successRate"]) == (
        1,
        1,
        1.0,
    )
    assert stats["store"]["restore"]["count"] == health["restore"]["samples"]


async def set_budget(editor: EditorClient, ratio: float) -> None:
    """Make the budget such that the store now fills ``ratio`` of it."""
    used = (await editor.request("retrace/metrics/get", {"text": False}))["storage"]["usedBytes"]
    retention = {**editor.settings.get("retention", {}), "maxBytes": int(used / ratio)}
    await editor.request("retrace/settings/update", {"settings": {**editor.settings, "retention": retention}})
    editor.settings = {**editor.settings, "retention": retention}


async def test_storage_alerts_once_per_crossing(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    # Incompressible bytes make the store big next to what a restart adds (caches, a journal).
    (workspace / "big.bin").write_bytes(os.urandom(400_000))
    editor = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    try:
        await alerts_as_the_budget_moves(editor)
    finally:
        await stop_editor(editor)
    # A restart still over 80 % does not say it again (the level said last is remembered).
    again = await start_editor(workspace, store, env=model_env(session_model), settings=editor.settings)
    try:
        snap = await again.request("retrace/metrics/get", {"text": False})
        assert snap["storage"]["alert"] == "warning"
        assert again.storage_alerts == []
        # The one-click fix: garbage collection now.
        gc = await again.request("retrace/store/gc", {})
        assert gc["report"]["checkpointsDropped"] >= 0
    finally:
        await stop_editor(again)


async def alerts_as_the_budget_moves(editor: EditorClient) -> None:
    await editor.run_turn("first task")
    await editor.request("retrace/metrics/get", {})
    assert editor.storage_alerts == []
    await set_budget(editor, 0.85)
    await wait_until(lambda: len(editor.storage_alerts) == 1)
    assert editor.storage_alerts[0]["level"] == "warning"
    assert 0.8 <= editor.storage_alerts[0]["ratio"] < 0.9
    # Still over 80 %: no second alert, whatever asks.
    await editor.request("retrace/metrics/get", {})
    snap = await editor.request("retrace/metrics/get", {})
    assert snap["storage"]["alert"] == "warning"
    assert len(editor.storage_alerts) == 1
    await set_budget(editor, 0.95)
    await wait_until(lambda: len(editor.storage_alerts) == 2)
    assert editor.storage_alerts[1]["level"] == "urgent"
    await set_budget(editor, 0.3)  # back below: re-armed, no alert
    await editor.request("retrace/metrics/get", {})
    await set_budget(editor, 0.85)
    await wait_until(lambda: len(editor.storage_alerts) == 3)
    assert [a["level"] for a in editor.storage_alerts] == ["warning", "urgent", "warning"]


async def test_scrape_endpoint_from_the_setting(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    port = free_port()
    settings = {**AUTO, "metrics": {"port": port}}
    editor = await start_editor(workspace, store, env=model_env(session_model), settings=settings)
    try:
        await editor.request("retrace/metrics/get", {"text": False})

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
                return str(reply.read().decode())

        body = scrape()
        assert sample_total(body, "retrace_checkpoints_total", kind="baseline") == 1
        # Turning it off closes the port.
        await editor.request("retrace/settings/update", {"settings": {**settings, "metrics": {"port": 0}}})
        with pytest.raises(OSError):
            scrape()
    finally:
        await stop_editor(editor)


async def test_an_untrusted_workspace_serves_no_endpoint_and_records_no_reason(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    port = free_port()
    settings = {**AUTO, "metrics": {"port": port}}
    editor = await start_editor(
        workspace, store, env=model_env(session_model), settings=settings, init_options={"trusted": False}
    )
    try:
        snap = await editor.request("retrace/metrics/get", {"text": False})  # reading is fine
        assert snap["checkpoints"]["successes"] >= 1
        head = (await editor.request("retrace/timeline/get", {}))["head"]
        for method, params in [
            ("retrace/restore/reason", {"checkpointId": head, "reason": "other"}),
            ("retrace/store/gc", {}),
        ]:
            error = await editor.request_error(method, params)
            data = error.data if isinstance(error.data, dict) else {}
            assert data.get("code") == "workspaceUntrusted", (method, error.message)
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        await stop_editor(editor)
