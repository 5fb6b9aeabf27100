"""Data-safety campaigns, part 1: what capture and restore must never lose.

Black-box: every step is the real ``retrace`` CLI in a subprocess on real temporary folders (see
``cli_support``); nothing imports the engine, so the campaigns stay valid across its rewrites.
Each campaign draws its cases from a seeded ``random.Random`` (the seed is in the figures; replay
with ``RETRACE_SEED=<seed>``), records its figures even when it fails, then fails on any finding.

1. size- and mtime-preserving writers (``os.utime(ns=...)``, ``cp -p``, ``touch -r``, ``tar x``,
   ``shutil.copy2``, ``rsync -a`` where installed) — the new bytes are never lost by a later restore;
2. ``.gitignore`` rewrites (root and nested, added and removed) — a path ignored at either end of a
   restore is never deleted or overwritten, and a restore creates no phantom external changes;
3. file ↔ directory ↔ symlink swaps — ``restore --force`` reproduces the checkpoint's tree exactly;
4. names of 200–255 bytes with multibyte UTF-8 and paths past PATH_MAX — in ``test_long_paths.py``.

"Restore then undo" is the common oracle: after an applied restore, restoring the checkpoint the
restore names as its undo point must give back the exact tree from before the restore.
"""

from __future__ import annotations

import fnmatch
import io
import os
import random
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from tests.oracles import entries
from tests.reliability.cli_support import (
    CONFLICT,
    CampaignCli,
    Result,
    Tally,
    Tree,
    campaign_seed,
    clear,
    initialised_cli,
    random_text,
    restore_and_undo,
    restored_checkpoint_id,
    tree_delta,
    undo_id,
)
from tests.reliability.conftest import full_only


@pytest.fixture
def cli(tmp_path: Path) -> CampaignCli:
    return initialised_cli(tmp_path)


# --------------------------------------------------------------------------- 1. mtime-preserving writers

MTIME = "data-safety-mtime"
MTIME_NAMES = ["a", "config.py", "src/settings.toml", "deep/er/notes ü.txt", "v"]
WRITERS = ["inplace-utime", "replace-utime", "cp-p", "touch-r", "tar-x", "copy2"]
if shutil.which("rsync"):
    WRITERS.append("rsync-a")


def _past_ns(rng: random.Random, whole_seconds: bool) -> int:
    seconds = int(time.time()) - rng.randint(120, 10**7)
    return seconds * 10**9 + (0 if whole_seconds else rng.randrange(1, 10**9))


def _same_size_change(rng: random.Random, old: bytes) -> bytes:
    new = bytearray(old)
    for _ in range(rng.randint(1, min(8, len(old)))):
        i = rng.randrange(len(new))
        new[i] = rng.choice([c for c in b"QRSTUVWXYZ" if c != new[i]])
    return bytes(new)


def write_preserving(writer: str, path: Path, new: bytes, scratch: Path) -> None:
    """Replace ``path``'s content by ``new`` (same size) the way ``writer`` does, keeping its mtime."""
    st = path.stat()
    stamp = (st.st_atime_ns, st.st_mtime_ns)
    tmp = scratch / "staged"
    if writer == "plain":  # the control: an ordinary write moves the mtime
        path.write_bytes(new)
        os.utime(path, ns=(time.time_ns(), max(time.time_ns(), st.st_mtime_ns + 10**9)))
        return
    if writer == "inplace-utime":
        with path.open("r+b") as f:
            f.write(new)
        os.utime(path, ns=stamp)
    elif writer == "replace-utime":
        tmp.write_bytes(new)
        os.utime(tmp, ns=stamp)
        os.replace(tmp, path)
    elif writer == "cp-p":
        tmp.write_bytes(new)
        subprocess.run(["touch", "-r", str(path), str(tmp)], check=True)
        subprocess.run(["cp", "-p", str(tmp), str(path)], check=True)
    elif writer == "touch-r":
        ref = scratch / "ref"
        subprocess.run(["touch", "-r", str(path), str(ref)], check=True)
        path.write_bytes(new)
        subprocess.run(["touch", "-r", str(ref), str(path)], check=True)
    elif writer == "tar-x":
        archive = scratch / "a.tar"
        with tarfile.open(archive, "w") as tar:
            info = tarfile.TarInfo(path.name)
            info.size, info.mtime, info.mode = len(new), st.st_mtime_ns // 10**9, st.st_mode & 0o777
            tar.addfile(info, io.BytesIO(new))
        subprocess.run(["tar", "-xf", str(archive), "-C", str(path.parent)], check=True)
    elif writer == "copy2":
        tmp.write_bytes(new)
        os.utime(tmp, ns=stamp)
        shutil.copy2(tmp, path)
    else:  # rsync -a compares size+mtime itself: --checksum makes it copy, -a keeps the stamp
        tmp.write_bytes(new)
        os.utime(tmp, ns=stamp)
        subprocess.run(["rsync", "-a", "--checksum", str(tmp), str(path)], check=True)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns), f"{writer} moved the stamp"


def mtime_trial(
    cli: CampaignCli, rng: random.Random, tally: Tally, writer: str, checkpoint_after: bool
) -> None:
    ws = cli.workspace
    rel = rng.choice(MTIME_NAMES)
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    whole = writer in ("tar-x", "rsync-a")  # archive formats keep whole seconds
    size = rng.choice([1, 7, rng.randint(20, 4000), rng.randint(4000, 300_000)])
    tally.kinds[writer] += 1
    tally.counts["files"] += 1
    path.write_bytes(random_text(rng, rng.randint(1, 2 * size)))
    (ws / "noise.txt").write_bytes(random_text(rng, rng.randint(1, 500)))
    old = cli.checkpoint("old")
    recorded = random_text(rng, size)
    path.write_bytes(recorded)
    stamp = _past_ns(rng, whole)
    os.utime(path, ns=(stamp, stamp))
    cli.checkpoint("recorded")
    write_preserving(writer, path, _same_size_change(rng, recorded), ws.parent)
    if checkpoint_after:
        cli.checkpoint("after the writer")
    before = entries(ws)
    try:
        outcome = restore_and_undo(cli, old, before, force=False, expect=None, refusal_ok=True)
    except AssertionError:
        if entries(ws).get(rel) != before[rel]:
            tally.counts["lost"] += 1
        raise
    names = {"refused": "refusedAsConflict", "nothing": "nothingToRestore", "applied": "restoresVerified"}
    tally.counts[names[outcome]] += 1


def mtime_repro(cli: CampaignCli, tally: Tally) -> None:
    """The reported case, step by step: ``touch -d``, ``touch -r``, a restore of C1."""
    ws = cli.workspace
    a = ws / "a"
    a.write_text("value = 1111\n")
    subprocess.run(["touch", "-d", "2 hours ago", str(a)], check=True)
    c1 = cli.checkpoint()
    a.write_text("value = 2222\n")
    subprocess.run(["touch", "-d", "1 hour ago", str(a)], check=True)
    cli.checkpoint()
    ref = ws.parent / "ref"
    subprocess.run(["touch", "-r", str(a), str(ref)], check=True)
    a.write_text("value = 3333\n")
    subprocess.run(["touch", "-r", str(ref), str(a)], check=True)
    before = entries(ws)
    tally.kinds["repro"] += 1
    try:
        restore_and_undo(cli, c1, before, force=False, expect=None, refusal_ok=True)
    except AssertionError:
        if (ws / "a").read_text() != "value = 3333\n":
            tally.counts["lost"] += 1
        raise


def run_mtime(cli: CampaignCli, variant: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(MTIME, variant, seed)
    tally.control("plain write", mtime_trial, cli, rng, tally, "plain", False)
    tally.trial("repro", mtime_repro, cli, tally)
    for i in range(trials):
        writer = WRITERS[i % len(WRITERS)] if i < len(WRITERS) else rng.choice(WRITERS)
        after = rng.random() < 0.5
        tally.trial(f"trial {i} {writer}", mtime_trial, cli, rng, tally, writer, after)
    tally.finish(writers=WRITERS)


def test_mtime_preserving_writers(cli: CampaignCli) -> None:
    run_mtime(cli, "ci", trials=len(WRITERS), seed=campaign_seed(20261201))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_mtime_preserving_writers_full(cli: CampaignCli) -> None:
    run_mtime(cli, "full", trials=60, seed=campaign_seed(0))


# --------------------------------------------------------------------------- 2. .gitignore changes

GITIGNORE = "data-safety-gitignore"
DIRS = ["", "d1", "d1/d2", "d3"]
NAMES = ["main.py", ".env", "app.log", "x.tmp", "secret.key", "data.csv", "readme.md"]
PATTERNS = [".env", "*.log", "*.tmp", "secret*", "data.csv", "d2", "readme.md"]
TOOL_LOOKALIKE = "lib/venv/__init__.pyi"
"""Real source inside a folder named like a tool folder (no ``pyvenv.cfg``): must be captured."""


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def ignored(rel: str, truth: Tree) -> bool:
    """Git's answer for the rule shapes used here (names and globs without '/', no negation):
    a path is ignored when a ``.gitignore`` in an ancestor folder has a rule matching any
    component of the path below that folder."""
    parts = rel.split("/")
    for depth in range(len(parts)):
        entry = truth.get("/".join([*parts[:depth], ".gitignore"]))
        if entry is None or entry[0] != "file":
            continue
        rules = [line.strip() for line in entry[1].decode().splitlines() if line.strip()]
        if any(fnmatch.fnmatchcase(name, rule) for name in parts[depth:] for rule in rules):
            return True
    return False


def _rules(rng: random.Random) -> bytes:
    return "".join(f"{rule}\n" for rule in rng.sample(PATTERNS, rng.randint(1, 3))).encode()


def gitignore_state(
    cli: CampaignCli, rng: random.Random, keep: tuple[str, ...] = (), lookalike: bool = True
) -> None:
    ws = cli.workspace
    clear(ws, keep)
    for folder in DIRS:
        for name in NAMES:
            if rng.random() < 0.5:
                path = ws / _join(folder, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(random_text(rng, rng.randint(1, 300)))
        if rng.random() < (0.8 if not folder else 0.4):
            (ws / folder).mkdir(parents=True, exist_ok=True)
            (ws / _join(folder, ".gitignore")).write_bytes(_rules(rng))
    if lookalike:
        (ws / TOOL_LOOKALIKE).parent.mkdir(parents=True, exist_ok=True)
        (ws / TOOL_LOOKALIKE).write_bytes(random_text(rng, rng.randint(1, 300)))


def gitignore_mutate(cli: CampaignCli, rng: random.Random, tally: Tally, new_rules: bool) -> None:
    """New rules (rewritten, added, removed; root and nested) and edits to files."""
    ws = cli.workspace
    for folder in DIRS if new_rules else []:
        rules = ws / _join(folder, ".gitignore")
        roll = rng.random()
        if roll < 0.35 and rules.exists():
            rules.unlink()
            tally.kinds["gitignoreRemoved"] += 1
        elif roll < 0.8:
            rules.parent.mkdir(parents=True, exist_ok=True)
            tally.kinds["gitignoreAdded" if not rules.exists() else "gitignoreRewritten"] += 1
            rules.write_bytes(_rules(rng))
    for folder in DIRS:
        for name in NAMES:
            path = ws / _join(folder, name)
            roll = rng.random()
            if roll < 0.3 and path.exists():
                path.unlink()
            elif roll < 0.7:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(random_text(rng, rng.randint(1, 300)))
    if new_rules and rng.random() < 0.5:
        (ws / TOOL_LOOKALIKE).write_bytes(random_text(rng, rng.randint(1, 300)))


def gitignore_trial(cli: CampaignCli, rng: random.Random, tally: Tally, new_rules: bool = True) -> None:
    ws = cli.workspace
    gitignore_state(cli, rng, lookalike=new_rules)  # the control leaves out the tool-folder lookalike
    target = cli.checkpoint("target")
    at_target = entries(ws)
    gitignore_mutate(cli, rng, tally, new_rules)
    cli.checkpoint("newer rules")
    # The user edits ignored files afterwards (say .env): nothing records them, nothing may touch them.
    now = entries(ws)
    for rel in [r for r in now if ignored(r, now)][:3]:
        (ws / rel).write_bytes(random_text(rng, rng.randint(1, 300)))
    before = entries(ws)
    protected = {r for r in set(before) | set(at_target) if ignored(r, before) or ignored(r, at_target)}
    tally.counts["files"] += len(set(before) | set(at_target))
    tally.counts["ignoredPaths"] += len(protected)
    expected = {r: v for r, v in at_target.items() if r not in protected}
    expected.update({r: before[r] for r in protected if r in before})

    force = rng.random() < 0.5
    result, payload = cli.restore(target, *(["--force"] if force else []))
    if result.code == CONFLICT and not force:
        tally.counts["conflictsReported"] += 1
        assert not tree_delta(before, entries(ws)), "a refused restore changed the workspace"
        result, payload = cli.restore(target, "--force")
    assert result.code == 0, f"restore: {result.brief()}"
    after = entries(ws)
    # Re-creating an ignored path that the target recorded loses nothing; any other change does.
    recreated = {r for r in protected if r not in before and r in after and after[r] == at_target.get(r)}
    hurt = sorted(r for r in protected - recreated if after.get(r) != before.get(r))
    if hurt:
        tally.counts["ignoredPathsTouched"] += len(hurt)
        undo = undo_id(result, payload)
        if undo:
            cli.restore(undo, "--force")
        back = entries(ws)
        # Lost: not even the restore's own undo point brings the bytes back.
        tally.counts["lost"] += sum(1 for r in hurt if back.get(r) != before.get(r))
        raise AssertionError(f"ignored paths touched by the restore: {hurt[:4]}")
    delta = tree_delta(expected, {r: v for r, v in after.items() if r not in recreated})
    assert not delta, f"restore is not the checkpoint's tracked content: {delta}"
    tally.counts["restoresVerified"] += 1

    undo_without_phantoms(cli, result, payload, before, recreated, tally)


def undo_without_phantoms(
    cli: CampaignCli, result: Result, payload: dict[str, Any], before: Tree, recreated: set[str], tally: Tally
) -> None:
    """Right after a restore nothing changed: its undo applies without conflicts, no external
    checkpoint appears, and the tree from before the restore is back."""
    restore_cp = restored_checkpoint_id(payload)
    undo = undo_id(result, payload)
    assert undo, "an applied restore names no undo point"
    back, _ = cli.restore(undo)
    log = cli.log()
    ids = [str(cp.get("id")) for cp in log]
    later = log[ids.index(restore_cp) + 1 :] if restore_cp in ids else []
    phantom = [cp.get("id") for cp in later if cp.get("kind") == "external"]
    tally.counts["phantomExternalCheckpoints"] += len(phantom)
    if back.code == CONFLICT:
        tally.counts["falseConflicts"] += 1
        back, _ = cli.restore(undo, "--force")
        raise AssertionError(f"undo right after a restore reported conflicts (phantom changes): {phantom}")
    assert not phantom, f"external checkpoints nobody caused: {phantom}"
    assert back.code == 0, f"undo: {back.brief()}"
    delta = tree_delta(before, {r: v for r, v in entries(cli.workspace).items() if r not in recreated})
    assert not delta, f"restore + undo changed work: {delta}"
    tally.counts["undoVerified"] += 1


def test_ignore_model_matches_git(tmp_path: Path) -> None:
    """The campaign's ground truth for "ignored" is git's own answer (``git check-ignore``)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    rng = random.Random(campaign_seed(20261208))
    cli = CampaignCli(tmp_path / "ws", tmp_path / "unused-store")
    cli.workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(cli.workspace)], check=True)
    compared = 0
    for _ in range(15):
        gitignore_state(cli, rng, keep=(".git",))
        truth = {r: v for r, v in entries(cli.workspace).items() if not r.startswith(".git/")}
        paths = sorted(truth) + [_join(folder, name) for folder in DIRS for name in NAMES]
        answer = subprocess.run(
            ["git", "-C", str(cli.workspace), "check-ignore", "--no-index", "--stdin"],
            input="\n".join(paths) + "\n",
            capture_output=True,
            text=True,
            check=False,
        )
        by_git = set(answer.stdout.splitlines())
        mismatched = [p for p in paths if ignored(p, truth) != (p in by_git)]
        assert not mismatched, f"ignore model disagrees with git on {mismatched[:5]}"
        compared += len(paths)
    assert compared > 0


def run_gitignore(cli: CampaignCli, variant: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(GITIGNORE, variant, seed)
    tally.control("same rules at both ends", gitignore_trial, cli, rng, tally, False)
    for i in range(trials):
        tally.trial(f"trial {i}", gitignore_trial, cli, rng, tally)
    tally.finish()


def test_gitignore_changes(cli: CampaignCli) -> None:
    run_gitignore(cli, "ci", trials=4, seed=campaign_seed(20261202))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_gitignore_changes_full(cli: CampaignCli) -> None:
    run_gitignore(cli, "full", trials=40, seed=campaign_seed(0))


# --------------------------------------------------------------------------- 3. type swaps

SWAPS = "data-safety-type-swaps"
TOP = ["a", "b", "c", "d e"]
KINDS = ["file", "dir", "link-file", "link-dir", "link-dangling", "link-outside"]


def make_entry(path: Path, kind: str, rng: random.Random, outside: Path, depth: int = 0) -> None:
    if kind == "file":
        path.write_bytes(random_text(rng, rng.randint(0, 2000)))
        if rng.random() < 0.3:
            path.chmod(0o755)
    elif kind == "dir":
        path.mkdir()
        for child in rng.sample(["x", "y", "z"], rng.randint(1, 2)):
            sub = rng.choice(KINDS if depth < 1 else ["file", "link-file"])
            make_entry(path / child, sub, rng, outside, depth + 1)
    elif kind == "link-file":
        os.symlink(rng.choice(["x", "../README.md", "y"]), path)
    elif kind == "link-dir":
        os.symlink(rng.choice([".", "..", "../a"]), path)
    elif kind == "link-dangling":
        os.symlink(f"missing-{rng.randrange(1000)}", path)
    else:
        os.symlink(str(rng.choice([outside, outside / "secret.txt"])), path)


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def swap_trial(
    cli: CampaignCli, rng: random.Random, tally: Tally, outside: Path, control: bool = False
) -> None:
    ws = cli.workspace
    guarded = entries(outside)
    beside = sorted(os.listdir(ws.parent))  # links to ".." point here: nothing may appear
    for name in TOP:
        remove(ws / name)
        if rng.random() < 0.85:
            make_entry(ws / name, rng.choice(KINDS), rng, outside)
    target = cli.checkpoint("target")
    at_target = entries(ws)
    tally.counts["files"] += len(at_target)
    for name in rng.sample(TOP, rng.randint(1, len(TOP))):
        if control and ((ws / name).is_symlink() or not (ws / name).is_file()):
            continue  # the control only edits files, keeping their kind
        candidates = [name] + [
            f"{name}/{c}" for c in "xyz" if (ws / name).is_dir() and not (ws / name).is_symlink()
        ]
        victim = ws / rng.choice(candidates)
        was = (
            "dir"
            if victim.is_dir() and not victim.is_symlink()
            else "link"
            if victim.is_symlink()
            else "file"
        )
        remove(victim)
        kind = "file" if control else rng.choice(KINDS)
        if victim.parent.is_dir():
            make_entry(victim, kind, rng, outside, depth=0 if victim.parent == ws else 1)
            tally.kinds[f"{was}->{kind.split('-')[0]}"] += 1
    if rng.random() < 0.5:
        cli.checkpoint("swapped")
        tally.counts["swapsCheckpointed"] += 1
    before = entries(ws)
    restore_and_undo(cli, target, before, force=True, expect=at_target)
    assert entries(outside) == guarded, "a restore changed files outside the workspace"
    assert sorted(os.listdir(ws.parent)) == beside, "a restore wrote beside the workspace"
    tally.counts["restoresVerified"] += 1


def run_swaps(cli: CampaignCli, variant: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(SWAPS, variant, seed)
    outside = cli.workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the workspace\n")
    tally.control("no kind changes", swap_trial, cli, rng, tally, outside, True)
    for i in range(trials):
        tally.trial(f"trial {i}", swap_trial, cli, rng, tally, outside)
    tally.finish()


def test_type_swaps(cli: CampaignCli) -> None:
    run_swaps(cli, "ci", trials=5, seed=campaign_seed(20261203))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_type_swaps_full(cli: CampaignCli) -> None:
    run_swaps(cli, "full", trials=50, seed=campaign_seed(0))
