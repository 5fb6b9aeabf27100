"""Data-safety campaigns, part 2: a damaged store and very large files, through the real CLI.

Same rules as ``test_data_safety.py``: subprocesses of the ``retrace`` CLI only, seeded cases,
figures recorded even on failure. The store is treated as a folder of files whose outline is
public (content-addressed blob files, line-per-record journals); the damage is done to those
files, never through the engine.

5. blob damage (a flipped byte, a truncation, a deletion, zeros, appended garbage in a random
   blob) — ``diff`` never shows bytes that are not the checkpoint's; a merge resolution never
   writes them; a restore either produces the checkpoint byte-exact or exits non-zero having
   changed NOTHING; ``verify`` finds it;
6. journal damage (a random line in the middle) — ``log`` still lists every other checkpoint, an
   undamaged checkpoint still restores byte-exact, ``verify`` exits 4, ``verify --repair``
   quarantines (never deletes) and leaves a store that verifies clean;
7. very large files — a forced restore that deletes or replaces a 1 GiB sparse file keeps the
   CLI's peak RSS bounded (measured per process with ``wait4``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest
import zstandard
from tests.oracles import entries
from tests.reliability.cli_support import (
    CampaignCli,
    Result,
    Tally,
    Tree,
    blob_files,
    campaign_seed,
    journal_files,
    random_text,
    tree_delta,
    write_tree,
)
from tests.reliability.conftest import full_only

DAMAGE_FOUND = 4
"""``retrace verify`` exit code when damage was found (0: clean)."""
DAMAGE_WORDS = ("damage", "corrupt", "unavailable", "unrecoverable", "missing", "cannot", "quarantin")
MiB = 1024 * 1024


class History:
    """A workspace and store with several checkpoints whose trees are known byte for byte."""

    def __init__(self, base: Path, rng: random.Random, checkpoints: int) -> None:
        self.workspace = base / "wörk space"
        self.workspace.mkdir()
        self.pristine = base / "pristine-store"
        self.base = base
        cli = CampaignCli(self.workspace, self.pristine)
        names = ["main.py", "src/lib.py", "src/data.json", "docs/notes ü.md", "bin/tool", "big.txt"]
        for name in names:
            self._write(name, rng)
        cli.init()
        self.ids: list[str] = []
        self.truth: dict[str, Tree] = {}
        for _ in range(checkpoints):
            for name in rng.sample(names, rng.randint(1, 3)):
                if rng.random() < 0.15 and (self.workspace / name).exists():
                    (self.workspace / name).unlink()
                else:
                    self._write(name, rng)
            cp = cli.checkpoint()
            self.ids.append(cp)
            self.truth[cp] = entries(self.workspace)
        self.all_ids = [str(cp["id"]) for cp in cli.log()]
        self.trials = 0

    def _write(self, name: str, rng: random.Random) -> None:
        path = self.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(random_text(rng, rng.randint(200, 60_000 if name == "big.txt" else 3000)))

    def fresh(self) -> CampaignCli:
        """A private copy of the undamaged store, and the workspace at its head."""
        store = self.base / f"store-{self.trials}"
        self.trials += 1
        shutil.copytree(self.pristine, store, symlinks=True)
        write_tree(self.workspace, self.truth[self.ids[-1]])
        return CampaignCli(self.workspace, store)


def restore_all_or_nothing(
    cli: CampaignCli, target: str, expect: Tree, tally: Tally, known_ids: list[str]
) -> Result:
    """A restore ends byte-exact at the checkpoint, or fails non-zero having changed nothing."""
    before = entries(cli.workspace)
    result, _ = cli.restore(target, "--force")
    now = entries(cli.workspace)
    if result.code == 0:
        delta = tree_delta(expect, now)
        if delta:
            tally.counts["restoresWrong"] += 1
        assert not delta, f"restore {target} exit 0 but the workspace is not the checkpoint: {delta}"
        tally.counts["restoresVerified"] += 1
    else:
        delta = tree_delta(before, now)
        if delta:
            tally.counts["failedRestoresThatChangedFiles"] += 1
        assert not delta, f"failed restore ({result.brief()}) changed the workspace: {delta}"
        said = result.out + result.err
        named = [cp for cp in known_ids if cp in said]
        assert named, f"a failed restore names no checkpoint ({result.brief()})"
        tally.counts["restoresRefusedUnchanged"] += 1
    return result


def verify_finds(cli: CampaignCli, tally: Tally, victim: Path | None = None) -> None:
    """``retrace verify`` reports the damage. The one exception: a flipped bit that changes no
    byte of what the blob decodes to (a zstd frame has don't-care header bits: 11 of 1,584
    single-bit flips of a 198-byte level-1 frame, 21 of 1,672 at level 3) is not damage of the
    data; then the victim must still decode to exactly the content its name is the hash of."""
    result = cli.run("verify")
    if result.code == 0 and victim is not None and intact_content(victim):
        tally.counts["flipsChangingNoContent"] += 1
        return
    assert result.code == DAMAGE_FOUND, f"retrace verify on a damaged store: {result.brief()}"
    tally.counts["verifyDetected"] += 1


def intact_content(victim: Path) -> bool:
    """Whether a (content-addressed, zstd) blob file still holds the content its name is the
    SHA-256 of."""
    try:
        data = zstandard.ZstdDecompressor().decompressobj().decompress(victim.read_bytes())
    except (zstandard.ZstdError, OSError):
        return False
    return hashlib.sha256(data).hexdigest() == victim.name


# --------------------------------------------------------------------------- 5. blob damage

BLOBS = "data-safety-blob-damage"
BLOB_DAMAGE = ["flip", "truncate", "delete", "zeros", "append"]


def damage_blob(path: Path, kind: str, rng: random.Random) -> None:
    if kind == "none":  # the control
        return
    data = bytearray(path.read_bytes())
    if kind == "delete":
        path.unlink()
        return
    if kind == "flip" and data:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del data[rng.randrange(len(data)) if data else 0 :]
    elif kind == "zeros" and data:
        start = rng.randrange(len(data))
        data[start : start + rng.randint(1, 64)] = bytes(min(64, len(data) - start))
    else:
        data += os.urandom(rng.randint(1, 64))
    if bytes(data) == path.read_bytes():  # zeros over zeros: make sure something changed
        data[0] ^= 0xFF
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def shows_only_real_bytes(shown: Result, reference: str) -> bool:
    """``shown`` prints ``reference``, or says the store is damaged and prints only lines taken
    from ``reference`` in order (a notice may be on stdout or stderr)."""
    if shown.out == reference:
        return True
    real = iter(reference.splitlines())
    for line in shown.out.splitlines():
        if any(word in line.lower() for word in DAMAGE_WORDS) and not line.startswith(("+", "-", " ")):
            continue
        if not any(line == candidate for candidate in real):
            return False
    return any(word in (shown.out + shown.err).lower() for word in DAMAGE_WORDS)


MARKERS = ("<<<<<<<", "=======", ">>>>>>>", "|||||||")


def merge_all_or_nothing(
    cli: CampaignCli, history: History, target: str, rng: random.Random, tally: Tally
) -> None:
    """An external edit, then a restore that resolves it by merging: the merged file holds only
    lines that one of the three versions (target, recorded, edited) has, or conflict markers."""
    head, at_target = history.truth[history.ids[-1]], history.truth[target]
    paths = [p for p in at_target if p in head and at_target[p] != head[p] and at_target[p][0] == "file"]
    if not paths:
        tally.counts["mergesSkipped"] += 1
        return
    rel = rng.choice(paths)
    edited = head[rel][1] + f"external edit {rng.randrange(10**6)}\n".encode()
    (cli.workspace / rel).write_bytes(edited)
    before = entries(cli.workspace)
    result, _ = cli.restore(target, "--resolve", f"{rel}=merge")
    now = entries(cli.workspace)
    if result.code != 0:
        delta = tree_delta(before, now)
        assert not delta, f"a merge restore that did not apply ({result.brief()}) changed files: {delta}"
        tally.counts["mergesRefusedUnchanged"] += 1
        return
    known = {*at_target[rel][1].splitlines(), *head[rel][1].splitlines(), *edited.splitlines()}
    merged = now.get(rel)
    assert merged is not None and merged[0] == "file", f"the merge restore removed {rel}"
    strange = [line for line in merged[1].splitlines() if line not in known and not line.startswith(MARKERS)]
    if strange:
        tally.counts["mergesWritingWrongContent"] += 1
    assert not strange, f"merge wrote {len(strange)} lines no version has into {rel}: {strange[0][:60]!r}"
    delta = tree_delta(
        {p: v for p, v in at_target.items() if p != rel}, {p: v for p, v in now.items() if p != rel}
    )
    assert not delta, f"merge restore exit 0 but the other files are not the checkpoint: {delta}"
    tally.counts["mergesVerified"] += 1


def blob_trial(
    history: History, rng: random.Random, tally: Tally, references: dict[tuple[str, str], str], kind: str
) -> None:
    cli = history.fresh()
    blobs = blob_files(cli.store)
    assert blobs, f"no blob files found under {cli.store}"
    victim = rng.choice(blobs)
    damage_blob(victim, kind, rng)
    if kind != "none":
        tally.kinds[kind] += 1
        tally.counts["blobsDamaged"] += 1
    a, b = sorted(rng.sample(history.ids, 2), key=history.ids.index)
    if (a, b) not in references:
        references[(a, b)] = CampaignCli(history.workspace, history.pristine).ok("diff", a, b).out

    def diff_check() -> None:
        shown = cli.run("diff", a, b)
        if shown.code != 0:
            tally.counts["diffsRefused"] += 1
            return
        if not shows_only_real_bytes(shown, references[(a, b)]):
            tally.counts["diffsShowingWrongContent"] += 1
            raise AssertionError(f"diff {a} {b} after '{kind}' shows content that is not the checkpoints'")
        tally.counts["diffsExact"] += 1

    target = rng.choice(history.ids[:-1])
    tally.check(f"trial {history.trials - 1} diff ({kind})", diff_check)
    label = f"trial {history.trials - 1} merge ({kind})"
    tally.check(label, merge_all_or_nothing, cli, history, target, rng, tally)
    tally.check(
        f"trial {history.trials - 1} restore ({kind})",
        restore_all_or_nothing,
        cli,
        target,
        history.truth[target],
        tally,
        history.all_ids,
    )
    if kind != "none":
        flipped = victim if kind == "flip" else None
        tally.check(f"trial {history.trials - 1} verify ({kind})", verify_finds, cli, tally, flipped)


def run_blobs(tmp_path: Path, variant: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(BLOBS, variant, seed)
    history = History(tmp_path, rng, checkpoints=4)
    references: dict[tuple[str, str], str] = {}
    tally.control("undamaged store", blob_trial, history, rng, tally, references, "none")
    for i in range(trials):
        kind = BLOB_DAMAGE[i % len(BLOB_DAMAGE)] if i < len(BLOB_DAMAGE) else rng.choice(BLOB_DAMAGE)
        tally.trial(f"trial {i}", blob_trial, history, rng, tally, references, kind)
    tally.finish(checkpointsInHistory=len(history.ids))


def test_blob_damage(tmp_path: Path) -> None:
    run_blobs(tmp_path, "ci", trials=len(BLOB_DAMAGE), seed=campaign_seed(20261205))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_blob_damage_full(tmp_path: Path) -> None:
    run_blobs(tmp_path, "full", trials=60, seed=campaign_seed(0))


# --------------------------------------------------------------------------- 6. journal damage

JOURNAL = "data-safety-journal-damage"
LINE_DAMAGE = ["garbage", "truncate", "nul", "split", "structure"]


def damage_line(line: bytes, kind: str, rng: random.Random) -> bytes:
    """A damaged version of one journal line (never valid JSON, never the same bytes)."""
    cut = rng.randrange(1, max(2, len(line) - 1))
    if kind == "garbage":
        return bytes(rng.choice(b"#%&*?@^~abc \t") for _ in range(rng.randint(1, 200)))
    if kind == "truncate":
        return line[:cut]
    if kind == "nul":
        return line[:cut] + b"\0" * rng.randint(1, 32) + line[cut + 32 :]
    if kind == "split":
        return line[:cut] + b"\n" + line[cut:]
    # A structural character replaced: the line no longer parses.
    spots = [i for i, c in enumerate(line) if c in b'{}":,']
    i = rng.choice(spots) if spots else 0
    return line[:i] + b"\x01" + line[i + 1 :]


def quarantined(store: Path, piece: bytes) -> bool:
    """Whether ``piece`` is kept under a quarantine folder of the store, as it was or JSON-escaped."""
    text = piece.decode("utf-8", "replace")
    forms = [piece, json.dumps(text)[1:-1].encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode()]
    return any(
        form in path.read_bytes()
        for path in store.rglob("*")
        if path.is_file() and "quarantine" in path.relative_to(store).as_posix().lower()
        for form in forms
    )


def journal_trial(history: History, rng: random.Random, tally: Tally, damage: bool = True) -> None:
    cli = history.fresh()
    journals = journal_files(cli.store)
    assert journals, f"no journal files found under {cli.store}"
    journal = rng.choice(journals)
    lines = journal.read_bytes().split(b"\n")
    middle = [i for i, line in enumerate(lines) if line.strip()][1:-1]
    assert middle, f"{journal.name} has no middle line"
    index = rng.choice(middle)
    original = lines[index]
    kind = rng.choice(LINE_DAMAGE) if damage else "none"
    if damage:
        lines[index] = damage_line(original, kind, rng)
        journal.write_bytes(b"\n".join(lines))
        tally.kinds[kind] += 1
        tally.counts["linesDamaged"] += 1
    damaged = {cp for cp in history.all_ids if cp.encode() in original} if damage else set()
    intact = [cp for cp in history.ids if cp not in damaged]
    blobs_before = {p.name for p in blob_files(cli.store)}
    label = f"trial {history.trials - 1} ({kind}, line {index + 1}/{len(middle) + 2})"

    def log_lists_the_rest() -> None:
        listed = {str(cp.get("id")) for cp in cli.log()}
        missing = sorted(set(history.all_ids) - damaged - listed)
        assert not missing, f"log lost undamaged checkpoints {missing}"
        tally.counts["logsReadable"] += 1

    def intact_restores() -> None:
        if not intact:
            return
        target = rng.choice(intact)
        result, _ = cli.restore(target, "--force")
        assert result.code == 0, f"restore of undamaged {target}: {result.brief()}"
        delta = tree_delta(history.truth[target], entries(cli.workspace))
        assert not delta, f"restore of undamaged {target} not byte-exact: {delta}"
        tally.counts["restoresVerified"] += 1

    def repair_quarantines() -> None:
        repaired = cli.run("verify", "--repair")
        assert repaired.code in (0, DAMAGE_FOUND), f"verify --repair: {repaired.brief()}"
        clean = cli.run("verify")
        assert clean.code == 0, f"verify after --repair: {clean.brief()}"
        piece = lines[index].strip(b"\n")
        assert not piece.strip() or quarantined(cli.store, piece), (
            "the damaged line is not in a quarantine folder"
        )
        gone = blobs_before - {p.name for p in cli.store.rglob("*") if p.is_file()}
        assert not gone, f"--repair deleted {len(gone)} blob files"
        tally.counts["repairsVerified"] += 1

    tally.check(f"{label} log", log_lists_the_rest)
    tally.check(f"{label} restore", intact_restores)
    if not damage:
        return
    tally.check(f"{label} verify", verify_finds, cli, tally)
    if tally.check(f"{label} repair", repair_quarantines):
        tally.check(f"{label} log after repair", log_lists_the_rest)
        tally.check(f"{label} restore after repair", intact_restores)


def run_journal(tmp_path: Path, variant: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(JOURNAL, variant, seed)
    history = History(tmp_path, rng, checkpoints=6)
    tally.control("undamaged journal", journal_trial, history, rng, tally, False)
    for i in range(trials):
        tally.trial(f"trial {i}", journal_trial, history, rng, tally)
    tally.finish(checkpointsInHistory=len(history.all_ids))


def test_journal_damage(tmp_path: Path) -> None:
    run_journal(tmp_path, "ci", trials=3, seed=campaign_seed(20261206))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_journal_damage_full(tmp_path: Path) -> None:
    run_journal(tmp_path, "full", trials=40, seed=campaign_seed(0))


# --------------------------------------------------------------------------- 7. very large files

LARGE = "data-safety-large-files"
RSS_BOUND_MB = 200


def large_trial(cli: CampaignCli, rng: random.Random, tally: Tally, size: int, recorded: bool) -> None:
    ws = cli.workspace
    (ws / "keep.txt").write_bytes(random_text(rng, 1000))
    (ws / "big.bin").write_bytes(random_text(rng, rng.randint(1, 5000)))
    for stale in ("huge.bin",):
        if (ws / stale).exists():
            (ws / stale).unlink()
    target = cli.checkpoint("small")
    at_target = entries(ws)
    for name in ("big.bin", "huge.bin"):
        with (ws / name).open("wb") as f:
            f.truncate(size)  # sparse: no disk used, every byte reads as zero
    tally.kinds["recorded" if recorded else "unrecorded"] += 1
    tally.counts["bytesInLargeFiles"] += 2 * size
    if recorded:
        cp = cli.run("checkpoint", "--label", "large")
        assert cp.code == 0, f"checkpoint of two {size // MiB} MiB files: {cp.brief()}"
        tally.counts["checkpointPeakRssMb"] = max(tally.counts["checkpointPeakRssMb"], cp.max_rss_kb // 1024)
    result, _ = cli.restore(target, "--force")
    peak = result.max_rss_kb // 1024
    tally.counts["restorePeakRssMb"] = max(tally.counts["restorePeakRssMb"], peak)
    assert result.code == 0, f"forced restore over {size // MiB} MiB files: {result.brief()}"
    delta = tree_delta(at_target, entries(ws))
    assert not delta, f"forced restore did not reach the checkpoint: {delta}"
    tally.counts["restoresVerified"] += 1
    assert peak <= RSS_BOUND_MB, (
        f"forced restore deleting/replacing {size // MiB} MiB files peaked at {peak} MB"
    )


def run_large(tmp_path: Path, variant: str, sizes: list[int], seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(LARGE, variant, seed)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cli = CampaignCli(workspace, tmp_path / "store")
    cli.init()
    tally.counts["checkpointPeakRssMb"] = 0
    tally.counts["restorePeakRssMb"] = 0
    tally.control("4 MiB files (stored)", large_trial, cli, rng, tally, 4 * MiB, True)
    for i, size in enumerate(sizes):
        recorded = i % 2 == 0
        tally.trial(
            f"trial {i} ({size // MiB} MiB, {'recorded' if recorded else 'unrecorded'})",
            large_trial,
            cli,
            rng,
            tally,
            size,
            recorded,
        )
    tally.finish(rssBoundMb=RSS_BOUND_MB, fileSizesMiB=[s // MiB for s in sizes])


def test_large_files(tmp_path: Path) -> None:
    run_large(tmp_path, "ci", [1024 * MiB, 1024 * MiB], seed=campaign_seed(20261207))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_large_files_full(tmp_path: Path) -> None:
    seed = campaign_seed(0)
    rng = random.Random(seed)
    sizes = [2048 * MiB, 2048 * MiB] + [rng.randint(9, 2048) * MiB for _ in range(4)]
    run_large(tmp_path, "full", sizes, seed=seed)
