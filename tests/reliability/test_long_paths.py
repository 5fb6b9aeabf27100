"""Data-safety campaign, part 3: long names and long paths, through the real CLI.

Names of 200–255 bytes mixing 1-, 2-, 3- and 4-byte UTF-8 characters (and spaces), in up to two
levels of equally long folder names, then edited, deleted and renamed: checkpoint, restore and undo
byte-exact, without conflicts. One trial goes past PATH_MAX (4096 bytes; written and read through
directory descriptors): the file is captured and restored byte-exact, or the checkpoint does not
claim to be complete. Same rules as ``test_data_safety.py`` (subprocesses only, seeded, figures
recorded before asserting, one control with names of 20–60 bytes).
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from tests.oracles import entries
from tests.reliability.cli_support import (
    CampaignCli,
    Tally,
    campaign_seed,
    initialised_cli,
    random_text,
    restore_and_undo,
)
from tests.reliability.conftest import full_only


@pytest.fixture
def cli(tmp_path: Path) -> CampaignCli:
    return initialised_cli(tmp_path)


LONG = "data-safety-long-names"
_CHARS = ["a", "Z", "0", "_", "-", " ", "é", "ß", "中", "語", "😀", "🦀"]


def long_name(rng: random.Random, size: tuple[int, int] = (200, 255)) -> str:
    """A name of 200–255 bytes (or ``size``) in UTF-8, mixing 1-, 2-, 3- and 4-byte characters."""
    target = rng.randint(*size)
    name = rng.choice(["a", "中", "é"])
    while True:
        char = rng.choice(_CHARS)
        if len((name + char).encode()) > target:
            break
        name += char
    name += "x" * (target - len(name.encode()))
    return name[:-1] + "x" if name.endswith(" ") else name


def long_trial(
    cli: CampaignCli, rng: random.Random, tally: Tally, size: tuple[int, int] = (200, 255)
) -> None:
    ws = cli.workspace
    folder = ws
    for _ in range(rng.randint(0, 2)):
        folder = folder / long_name(rng, size)
    folder.mkdir(parents=True, exist_ok=True)
    names = [long_name(rng, size) for _ in range(rng.randint(2, 4))]
    for name in names:
        (folder / name).write_bytes(random_text(rng, rng.randint(1, 5000)))
    tally.counts["files"] += len(names)
    tally.kinds[f"{max(len(n.encode()) for n in names) // 10 * 10}+ bytes"] += 1
    target = cli.checkpoint("long names")
    at_target = entries(ws)
    for name in names:
        roll = rng.random()
        if roll < 0.4:
            (folder / name).write_bytes(random_text(rng, rng.randint(1, 5000)))
        elif roll < 0.6:
            (folder / name).unlink()
        elif roll < 0.8:
            (folder / name).rename(folder / long_name(rng, size))
    (folder / long_name(rng, size)).write_bytes(random_text(rng, rng.randint(1, 500)))
    cli.checkpoint("changed")
    before = entries(ws)
    restore_and_undo(cli, target, before, force=False, expect=at_target)
    tally.counts["restoresVerified"] += 1


def _deep(ws: Path, names: list[str], leaf: str, data: bytes | None = None) -> bytes | None:
    """Write (``data`` given) or read a file below ``names`` through directory descriptors, so the
    path may exceed PATH_MAX. Reading a missing file gives None."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            if data is not None and not os.path.lexists(f"/proc/self/fd/{fd}/{name}"):
                os.mkdir(name, dir_fd=fd)
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                return None
            os.close(fd)
            fd = inner
        if data is None:
            try:
                f = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                return None
            with os.fdopen(f, "rb") as stream:
                return stream.read()
        f = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
        with os.fdopen(f, "wb") as stream:
            stream.write(data)
        return data
    finally:
        os.close(fd)


def beyond_path_max(cli: CampaignCli, rng: random.Random, tally: Tally) -> None:
    """A file whose path is longer than PATH_MAX (4096 bytes): captured and restorable, or the
    checkpoint says it is not complete — never left out of a checkpoint that claims "full"."""
    ws = cli.workspace
    names: list[str] = []
    while len(os.fsencode(ws)) + sum(len(n.encode()) + 1 for n in names) < 4300:
        names.append(long_name(rng, (200, 250)))
    rel = "/".join([*names, "deep.txt"])
    first = random_text(rng, rng.randint(1, 3000))
    _deep(ws, names, "deep.txt", first)
    tally.kinds[f"path of {len(rel.encode())} bytes"] += 1
    try:
        cp = cli.ok("checkpoint", "--json").payload()
        assert isinstance(cp, dict), "checkpoint --json printed no object"
        captured = any(f.get("path") == rel for f in cp.get("files", []))
        if not captured:
            tally.counts["deepPathsNotCaptured"] += 1
            assert cp.get("recoverability") != "full", (
                "a path beyond PATH_MAX left out of a 'full' checkpoint"
            )
            return
        _deep(ws, names, "deep.txt", random_text(rng, rng.randint(1, 3000)))
        cli.checkpoint("deep edit")
        result, _ = cli.restore(str(cp["id"]))
        assert result.code == 0, f"restore of a path beyond PATH_MAX: {result.brief()}"
        assert _deep(ws, names, "deep.txt") == first, "a path beyond PATH_MAX was not restored byte-exact"
        tally.counts["restoresVerified"] += 1
    finally:
        shutil.rmtree(ws / names[0])  # fd-based: fine beyond PATH_MAX
        cli.checkpoint("deep path removed")


def run_long(cli: CampaignCli, variant: str, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    tally = Tally(LONG, variant, seed)
    tally.control("names of 20-60 bytes", long_trial, cli, rng, tally, (20, 60))
    for i in range(trials):
        tally.trial(f"trial {i}", long_trial, cli, rng, tally)
    tally.trial("path beyond PATH_MAX", beyond_path_max, cli, rng, tally)
    tally.finish()


def test_long_names(cli: CampaignCli) -> None:
    run_long(cli, "ci", trials=4, seed=campaign_seed(20261204))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@full_only
def test_long_names_full(cli: CampaignCli) -> None:
    run_long(cli, "full", trials=40, seed=campaign_seed(0))
