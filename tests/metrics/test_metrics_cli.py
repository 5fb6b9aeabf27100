"""``retrace metrics`` and ``retrace restore --reason`` as a user runs them (the real CLI as a
subprocess), the Prometheus output read back with the official parser, the lock refusal count,
and the scrape endpoint: it serves the same text and listens on loopback only."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.cli.cli_support import Cli
from tests.net_support import free_port

from retrace.app.metrics.collect import collect
from retrace.app.metrics.http import serve
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.errors import StoreLocked

pytestmark = pytest.mark.slow


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) → value, through the official parser."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(values: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return sum(
        v for (n, ls), v in values.items() if n == name and all((k, w) in ls for k, w in labels.items())
    )


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    c = Cli(ws, tmp_path / "store")
    c("init")
    return c


def test_metrics_after_cli_restores_with_reasons(cli: Cli) -> None:
    ws = cli.workspace
    base = json.loads(cli("log", "--json").stdout)[0]["id"]
    (ws / "a.txt").write_text("two\n")
    cli("checkpoint", "--label", "two")
    restored = json.loads(cli("restore", base, "--reason", "brokeTests", "--json").stdout)
    assert restored["kind"] == "applied"
    assert restored["restoreReason"] == {"checkpointId": restored["checkpoint"]["id"], "reason": "brokeTests"}
    (ws / "a.txt").write_text("three\n")
    cli("checkpoint")
    plain = cli("restore", base, "--reason", "other")
    assert "Reason recorded: other." in plain.stdout
    cli("restore", base)  # nothing to restore: no restore, no reason
    dry = json.loads(cli("restore", base, "--dry-run", "--reason", "other", "--json").stdout)
    assert "restoreReason" not in dry
    cli("restore", base, "--reason", "bored", code=2)  # not one of the reasons

    text = cli("metrics").stdout
    values = samples(text)
    log = json.loads(cli("log", "--json").stdout)
    by_kind: dict[str, int] = {}
    for cp in log:
        by_kind[cp["kind"]] = by_kind.get(cp["kind"], 0) + 1
    for kind, n in by_kind.items():
        assert total(values, "retrace_checkpoints_total", kind=kind) == n
        assert total(values, "retrace_checkpoint_attempts_total", kind=kind) == n
    assert total(values, "retrace_checkpoint_failures_total") == 0
    assert total(values, "retrace_restores_total", reason="brokeTests", mode="code", outcome="applied") == 1
    assert total(values, "retrace_restores_total", reason="other") == 1
    assert total(values, "retrace_restores_total") == 2
    captures = [cp["captureMs"] / 1000 for cp in log if cp["kind"] != "baseline"]
    assert values[("retrace_capture_duration_seconds_count", ())] == len(captures)
    assert values[("retrace_capture_duration_seconds_sum", ())] == pytest.approx(sum(captures))
    assert values[("retrace_restore_duration_seconds_count", ())] == 2
    assert values[("retrace_restore_duration_seconds_bucket", (("le", "+Inf"),))] == 2
    assert values[("retrace_storage_alert", (("state", "ok"),))] == 1
    assert values[("retrace_workspace_info", (("workspace", str(ws.resolve())),))] == 1

    snap: dict[str, Any] = json.loads(cli("metrics", "--json").stdout)
    assert snap["checkpoints"] == {
        "attempts": len(log),
        "successes": len(log),
        "failures": 0,
        "successRatio": 1.0,
        "byKind": by_kind,
    }
    assert snap["restoresByReason"] == {"brokeTests": 1, "other": 1}
    assert snap["restoresByMode"] == {"code": 2}
    assert snap["captureSeconds"] == pytest.approx(captures)
    assert "text" not in snap

    # A small budget: the storage gauge says warning/urgent.
    used = snap["storage"]["usedBytes"]
    urgent = samples(cli("metrics", "--budget-bytes", str(int(used / 0.95))).stdout)
    assert urgent[("retrace_storage_alert", (("state", "urgent"),))] == 1


def test_lock_refusals_are_counted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = tmp_path / "store"
    with Engine.open(ws, store, create=True, config=EngineConfig()):
        for _ in range(2):
            with pytest.raises(StoreLocked):
                Engine.open(ws, store, session_id="other", config=EngineConfig())
        text = samples(Cli(ws, store)("metrics").stdout)
    assert text[("retrace_store_lock_refusals_total", ())] == 2


def outside_address() -> str | None:
    """An address of this machine that is not loopback (None when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
            addr = str(s.getsockname()[0])
        except OSError:
            return None
    return None if addr.startswith("127.") else addr


def listening_on(port: int) -> set[str]:
    """Local addresses listening on ``port`` (Linux /proc), as hex as the kernel writes them."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if int(hexport, 16) == port and fields[3] == "0A":  # LISTEN
                found.add(addr)
    return found


def test_endpoint_serves_metrics_on_loopback_only(cli: Cli) -> None:
    assert serve(0, lambda: collect(cli.store, cli.workspace, 1000)) is None  # 0: off
    port = free_port()
    endpoint = serve(port, lambda: collect(cli.store, cli.workspace, 10**9, record=False))
    assert endpoint is not None
    try:
        assert endpoint.address == ("127.0.0.1", port)
        if Path("/proc/net/tcp").exists():
            assert listening_on(port) == {"0100007F"}  # 127.0.0.1, and nothing else
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            body = reply.read().decode()
        values = samples(body)
        assert values[("retrace_checkpoints_total", (("kind", "baseline"), ("session", "cli")))] == 1
        if Path("/proc/self/stat").exists():
            assert values[("process_resident_memory_bytes", ())] > 0
        outside = outside_address()
        if outside is not None:
            with pytest.raises(OSError), socket.create_connection((outside, port), timeout=5):
                pass
    finally:
        endpoint.close()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_remote_sync_lag_before_any_push(cli: Cli) -> None:
    from retrace.sync.service import RemoteService

    RemoteService(cli.store, cli.workspace.resolve()).add("team", "s3://bucket/prefix")
    snap = json.loads(cli("metrics", "--json").stdout)
    [lag] = snap["remotes"]
    assert lag["remote"] == "team" and lag["secondsSincePush"] is None and lag["pendingBytes"] > 0
    values = samples(cli("metrics").stdout)
    assert values[("retrace_remote_pending_bytes", (("remote", "team"),))] == lag["pendingBytes"]
    assert not any(name == "retrace_remote_last_push_age_seconds" for name, _ in values)


def test_conflicts_are_counted_by_resolution(cli: Cli) -> None:
    ws = cli.workspace
    (ws / "b.txt").write_text("x\n")
    cli("checkpoint")
    base = json.loads(cli("log", "--json").stdout)[-1]["id"]
    rounds = [("", 3), ("a.txt=skip", 0), ("a.txt=overwrite", 0)]
    for n, (resolve, code) in enumerate(rounds):
        (ws / "a.txt").write_text(f"agent {n}\n")
        (ws / "b.txt").write_text(f"y{n}\n")
        cli("checkpoint")
        (ws / "a.txt").write_text(f"user {n}\n")  # unrecorded: a conflict for the restore
        cli("restore", base, *(("--resolve", resolve) if resolve else ()), code=code)
    values = samples(cli("metrics").stdout)
    name = "retrace_restore_conflicts_total"
    by_resolution = {dict(labels)["resolution"]: v for (n, labels), v in values.items() if n == name}
    assert by_resolution == {"unresolved": 1, "skip": 1, "overwrite": 1}
    assert total(values, "retrace_restores_total", outcome="conflict") == 1
    assert total(values, "retrace_restores_total", outcome="applied") == 2


@pytest.mark.parametrize("budget", ["0", "-5", "1.5", "lots"])
def test_a_budget_that_is_not_a_positive_byte_count_is_refused(cli: Cli, budget: str) -> None:
    proc = cli("metrics", f"--budget-bytes={budget}", code=2)
    assert "--budget-bytes" in proc.stderr and "positive" in proc.stderr, proc.stderr
    assert proc.stdout == ""
