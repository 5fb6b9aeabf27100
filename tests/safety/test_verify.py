"""``retrace verify [--quick] [--repair] [--json]`` through the real CLI: finds every kind of
damage, names the checkpoints it affects, exits 0 clean / 4 damaged / 1 error, and ``--repair``
quarantines damaged pieces (never deletes them) so the rest of the store is clean again."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_support import Cli
from tests.safety.store_damage import BLOB_DAMAGE, damage_blob, sha

pytestmark = pytest.mark.slow

OLD = b"old content\n" * 20
MID = b"middle content\n" * 20
NEW = b"new content\n" * 20


def _history(cli: Cli) -> list[str]:
    ws = cli.workspace
    (ws / "a.txt").write_bytes(OLD)
    (ws / "keep.txt").write_bytes(b"keep\n")
    cli("init")
    ids = []
    for data in (MID, NEW):
        (ws / "a.txt").write_bytes(data)
        ids.append(cli("checkpoint").stdout.strip())
    return ids


def _journal(cli: Cli) -> Path:
    return next((cli.store / "sessions").glob("*/journal.jsonl"))


def test_clean_store_verifies(cli: Cli) -> None:
    _history(cli)
    for extra in ((), ("--quick",)):
        report = cli.json("verify", *extra)
        assert report["ok"] and not report["damage"] and report["checkpoints"] == 3
    assert "No damage found." in cli("verify").stdout


@pytest.mark.parametrize("how", BLOB_DAMAGE)
def test_blob_damage_is_found_and_named(cli: Cli, how: str) -> None:
    c1, c2 = _history(cli)
    damage_blob(cli.store, sha(MID), how)
    report = cli.json("verify", code=4)
    assert not report["ok"]
    assert any(d["kind"] == "blob" and d["where"] == sha(MID) for d in report["damage"])
    affected = {a["id"]: a for a in report["affected"]}
    assert c1 in affected and affected[c1]["paths"] == ["a.txt"]
    assert c2 not in affected  # c2 no longer holds that content
    text = cli("verify", code=4).stdout
    assert sha(MID) in text and c1 in text


def test_quick_check_sees_missing_blobs_without_reading(cli: Cli) -> None:
    c1, _c2 = _history(cli)
    damage_blob(cli.store, sha(MID), "delete")
    report = cli.json("verify", "--quick", code=4)
    assert report["quick"] and c1 in {a["id"] for a in report["affected"]}


def test_journal_damage_is_found_and_repaired_into_quarantine(cli: Cli) -> None:
    c1, c2 = _history(cli)
    journal = _journal(cli)
    lines = journal.read_bytes().splitlines()
    idx = next(i for i, ln in enumerate(lines) if c1.encode() in ln)
    lines[idx] = b'{"type":"checkpoint","checkpoint":{"id":"' + c1.encode() + b'","kind":7}}'
    lines.insert(1, b"\0\0\0garbage")
    damaged = b"".join(ln + b"\n" for ln in lines)
    journal.write_bytes(damaged)
    report = cli.json("verify", code=4)
    kinds = sorted(d["kind"] for d in report["damage"])
    # The rewritten line has no checksum among checksummed lines: damage of kind "checksum".
    assert kinds == ["checksum", "journalLine"]
    assert [d["checkpointId"] for d in report["damage"] if d["kind"] == "checksum"] == [c1]
    # c1's own entry is gone, but c2's line carries a copy of c1's changes: nothing is affected.
    assert not report["affected"]
    repaired = cli.json("verify", "--repair")
    assert not repaired["damage"] and repaired["repaired"] and repaired["ok"]
    quarantine = Path(repaired["quarantine"])
    assert quarantine.is_relative_to(cli.store / "quarantine")
    kept = list((quarantine / "journals").iterdir())
    assert [k.read_bytes() for k in kept] == [damaged]  # nothing deleted
    assert b"garbage" in (quarantine / "bad-lines.txt").read_bytes()
    # The rest of the store is clean and usable, c1 included (rebuilt from c2's copy).
    assert cli.json("verify")["ok"]
    for cid, data in ((c1, MID), (c2, NEW), (cli.json("log")[0]["id"], OLD)):
        cli("restore", cid, "--force")
        assert (cli.workspace / "a.txt").read_bytes() == data


@pytest.mark.parametrize("how", BLOB_DAMAGE)
def test_repair_quarantines_blobs_and_restores_from_the_workspace(cli: Cli, how: str) -> None:
    c1, c2 = _history(cli)
    damage_blob(cli.store, sha(NEW), how)  # the head's content: still in the workspace
    damage_blob(cli.store, sha(MID), how)  # only in the store: lost
    cli("verify", code=4)
    repaired = cli.json("verify", "--repair", code=4)
    assert any("stored again from the workspace file a.txt" in r for r in repaired["repaired"])
    assert {a["id"] for a in repaired["affected"]} == {c1}
    if how != "delete":
        quarantined = list(Path(repaired["quarantine"]).rglob("*"))
        assert quarantined, "damaged blob bytes are kept, not deleted"
    cli("restore", c2, "--force")
    cli("restore", cli.json("log")[0]["id"], "--force")
    assert (cli.workspace / "a.txt").read_bytes() == OLD
    cli("restore", c2, "--force")
    assert (cli.workspace / "a.txt").read_bytes() == NEW
    assert cli("restore", c1, code=1).returncode == 1


def test_verify_errors_exit_1(cli: Cli) -> None:
    proc = cli("verify", code=1)
    assert proc.stderr.startswith("retrace: error: ")
