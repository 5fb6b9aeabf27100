"""Journal integrity through the real CLI (ISSUE25 items 1 and 3): black box, subprocesses only.

8. bit flips — one random bit flipped (or one byte substituted) in a random journal line: either
   ``retrace verify`` reports damage (exit 4, ``--json`` naming the line) or the history reads
   back unchanged; a restore of a checkpoint ``log`` still lists gives its recorded tree,
   byte for byte, or refuses having changed nothing. Never a silently different tree.
9. forged paths — a journal line whose checksum was redone names ``../outside/x``, an absolute
   path, ``a/../../x``, ``.git/config``, ``a/.git/hooks/x``, ``a//b``, a NUL: a plain ``retrace
   restore`` of that checkpoint writes nothing outside the workspace and nothing into ``.git``;
   ``retrace verify --json`` names the path (kind ``path``) and the checkpoint.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from tests.oracles import entries
from tests.reliability.cli_support import CampaignCli, Tally, campaign_seed, journal_files, tree_delta
from tests.reliability.conftest import FULL
from tests.reliability.test_store_damage import DAMAGE_FOUND, History

from retrace.engine.store.journal import seal_event

FLIPS = "journal-integrity-bit-flips"
PATHS = "journal-integrity-forged-paths"


def _lines(journal: Path) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in journal.read_bytes().split(b"\n")[:-1]:
        out.append((pos, len(line) + 1))
        pos += len(line) + 1
    return out


def _flip(cli: CampaignCli, rng: random.Random, tally: Tally) -> str:
    journals = journal_files(cli.store)
    journal = rng.choice(journals)
    start, length = rng.choice(_lines(journal))
    data = bytearray(journal.read_bytes())
    at = start + rng.randrange(length)
    old = data[at]
    if rng.random() < 0.5:
        data[at] ^= 1 << rng.randrange(8)
        kind = "flip"
    else:
        data[at] = rng.choice([v for v in range(256) if v != old])
        kind = "byte"
    journal.write_bytes(bytes(data))
    tally.kinds[kind] += 1
    return f"{journal.parent.name}@{at}:{old:#04x}->{data[at]:#04x}"


def flip_trial(history: History, rng: random.Random, tally: Tally) -> None:
    cli = history.fresh()
    where = _flip(cli, rng, tally)
    verify = cli.run("verify", "--json")
    listed = [str(cp["id"]) for cp in cli.log()]
    for cp in listed:
        assert cp in history.all_ids, f"{where}: log lists a checkpoint that was never made: {cp}"
    if verify.code == 0:
        assert listed == history.all_ids, f"{where}: verify clean but the history changed"
        tally.counts["harmless"] += 1
    else:
        assert verify.code == DAMAGE_FOUND, f"{where}: verify {verify.brief()}"
        kinds = {d["kind"] for d in verify.payload()["damage"]}
        tally.counts["detected"] += 1
        tally.kinds.update(f"damage:{k}" for k in kinds)
    for target in rng.sample([cp for cp in history.ids if cp in listed], k=1):
        before = entries(cli.workspace)
        result, _ = cli.restore(target, "--force")
        now = entries(cli.workspace)
        if result.code == 0:
            delta = tree_delta(history.truth[target], now)
            assert not delta, f"{where}: restore {target} gave a tree that was never recorded: {delta}"
            tally.counts["restoresVerified"] += 1
        else:
            delta = tree_delta(before, now)
            assert not delta, f"{where}: a refused restore of {target} changed files: {delta}"
            tally.counts["restoresRefusedUnchanged"] += 1


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return History(tmp_path_factory.mktemp("journal-integrity"), random.Random(7), 4)


@pytest.mark.timeout(1200)
def test_bit_flips_in_journal_lines_are_reported_or_harmless(history: History) -> None:
    seed = campaign_seed(25)
    rng = random.Random(seed)
    tally = Tally(FLIPS, "cli", seed)
    for i in range(60 if FULL else 8):
        tally.trial(f"trial {i}", flip_trial, history, rng, tally)
    tally.finish(silentlyDifferentTrees=0)


ESCAPES = [
    "../outside/x",
    "a/../../outside/y",
    "/tmp/retrace-r3-abs-escape",
    ".git/config",
    "src/.git/hooks/pre-commit",
    "a//b",
    "./dot",
    "nul\x00byte",
]


def _forge(cli: CampaignCli, bad: str) -> str:
    """The newest checkpoint line gains ``bad`` (an exec-bit file of existing content) in its
    delta and file list; its checksum is redone, so only the path rule stands in the way."""
    journal = next(j for j in journal_files(cli.store) if b'"type":"checkpoint"' in j.read_bytes())
    lines = journal.read_bytes().split(b"\n")
    n = max(i for i, ln in enumerate(lines) if b'"type":"checkpoint"' in ln)
    ev = json.loads(lines[n])
    entry = next(e for e in (ev["delta"] or {}).values() if e is not None and e["kind"] == "file")
    ev["delta"][bad] = {**entry, "executable": True}
    ev["checkpoint"]["files"].append({"path": bad, "status": "added"})
    lines[n] = seal_event(ev)
    journal.write_bytes(b"\n".join(lines))
    return str(ev["checkpoint"]["id"])


def forged_trial(history: History, bad: str, tally: Tally) -> None:
    cli = history.fresh()
    git = cli.workspace / ".git"
    git.mkdir(exist_ok=True)
    (git / "config").write_text("[core]\n")
    root = cli.workspace.parent
    outside_before = {p for p in root.rglob("*") if not p.is_relative_to(cli.workspace)}
    cid = _forge(cli, bad)
    verify = cli.run("verify", "--json")
    assert verify.code == DAMAGE_FOUND, f"{bad!r}: verify {verify.brief()}"
    report = verify.payload()
    named = [d for d in report["damage"] if d["kind"] == "path" and d["checkpointId"] == cid]
    assert named, f"{bad!r}: verify --json does not name the path: {report['damage']}"
    assert any(a["id"] == cid for a in report["affected"]), f"{bad!r}: checkpoint not listed as affected"
    tally.counts["verifyNamed"] += 1
    # The workspace is at that checkpoint: only the forged path could make a plan; then forced.
    for args in ((cid,), (cid, "--force")):
        cli.run("restore", *args)
    outside_after = {p for p in root.rglob("*") if not p.is_relative_to(cli.workspace)}
    new = sorted(str(p) for p in outside_after - outside_before if not p.is_relative_to(cli.store))
    assert not new, f"{bad!r}: restore wrote outside the workspace: {new[:3]}"
    assert not Path("/tmp/retrace-r3-abs-escape").exists(), "restore wrote an absolute path"
    assert (git / "config").read_text() == "[core]\n", f"{bad!r}: restore wrote into .git"
    assert sorted(p.name for p in git.iterdir()) == ["config"], f"{bad!r}: restore wrote into .git"
    assert not (cli.workspace / "a" / "b").exists() or bad != "a//b"
    tally.counts["restoresContained"] += 1


@pytest.mark.timeout(1200)
def test_forged_paths_are_damage_never_instructions(history: History) -> None:
    tally = Tally(PATHS, "cli", 0)
    for bad in ESCAPES:
        tally.kinds[repr(bad)] += 1
        tally.trial(repr(bad), forged_trial, history, bad, tally)
    tally.finish(writtenOutside=0, writtenIntoGit=0)
