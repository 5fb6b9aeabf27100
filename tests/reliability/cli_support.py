"""Black-box helpers for the data-safety campaigns: the ``retrace`` CLI as a real subprocess.

Nothing here imports the engine. The campaigns only see what a user sees: exit codes, the
``--json`` output, the workspace on disk and the store directory's files. That keeps them valid
while the engine's capture, restore and storage code is rewritten underneath.

- :class:`CampaignCli` runs one command per subprocess and measures that process's peak RSS
  (``os.wait4``), so memory figures belong to exactly one command.
- :class:`Tally` collects a campaign's counts and failures, records the figures (also when the
  campaign fails, so the report shows what went wrong) and then fails the test if anything did.
- :func:`restore_and_undo` is the common oracle: an applied restore gives the checkpoint's tree,
  and restoring the undo point it names gives back the tree from before it.
- ``tests.oracles.entries`` is the ground truth; :func:`write_tree` puts a recorded tree
  back on disk; :func:`tree_delta` says briefly how two trees differ.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import cli_forkserver
from tests.cli.cli_support import Cli
from tests.oracles import entries
from tests.reliability.conftest import FULL, record_figures

Tree = dict[str, tuple[str, bytes, bool]]

_PEAK_WRAPPER = """
import atexit, os, runpy, sys
def _peak():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmHWM:'):
                with open(os.environ['RETRACE_TEST_PEAK_FILE'], 'w') as out:
                    out.write(line.split()[1])
if os.path.exists('/proc/self/status'):
    atexit.register(_peak)
sys.argv = ['retrace', *sys.argv[1:]]
runpy.run_module('retrace', run_name='__main__', alter_sys=True)
"""
COMMAND = [sys.executable, "-c", _PEAK_WRAPPER]
"""The real CLI (``python -m retrace``) in a wrapper that records the process's own peak RSS
(``VmHWM``, per address space) at exit. ``ru_maxrss`` of a forked child is not enough: Linux
carries the parent's high-water mark across ``exec``, so a child of a large test process would
report the parent's peak."""
_UNDO = re.compile(r"Undo with: retrace restore (\S+)")
CONFLICT = 3
"""``retrace restore`` exit code when it refused because of conflicts."""


def campaign_seed(ci_seed: int) -> int:
    """``RETRACE_SEED`` when set (to replay a run), a fixed seed in CI, a fresh one in full runs."""
    if os.environ.get("RETRACE_SEED"):
        return int(os.environ["RETRACE_SEED"])
    return int(time.time()) if FULL else ci_seed


@dataclass
class Result:
    code: int
    out: str
    err: str
    max_rss_kb: int
    seconds: float

    def payload(self) -> Any:
        """The ``--json`` answer, or None when stdout is not JSON (an error exit)."""
        try:
            return json.loads(self.out)
        except ValueError:
            return None

    def brief(self) -> str:
        text = (self.err.strip() or self.out.strip()).replace("\n", " | ")
        return f"exit {self.code}: {text[:240]}"


def _own_peak_kb(peak_file: Path, fallback_kb: int) -> int:
    """The command's own peak RSS in KiB (its ``VmHWM``), else the rusage figure."""
    try:
        text = peak_file.read_text().strip()
    finally:
        peak_file.unlink(missing_ok=True)
    return int(text) if text.isdigit() else fallback_kb


def _run(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str, int]:
    """One command: exit code, stdout, stderr, and its rusage peak RSS (KiB), killed after
    ``timeout`` seconds. A fork of the CLI fork server (``ForkServer.run``: the imports done once
    per test process), or a cold ``python -c`` process with RETRACE_TEST_FORK_CLI=0."""
    read = lambda data: data.decode("utf-8", "replace")  # noqa: E731
    if cli_forkserver.enabled():
        ran = cli_forkserver.server().run(_PEAK_WRAPPER, ["-c", *argv], env=env, timeout=timeout)
        return ran.exit.code, read(ran.stdout), read(ran.stderr), ran.exit.maxrss_kb
    with tempfile.TemporaryDirectory(prefix="retrace-cli-") as tmp:
        out_path, err_path = Path(tmp, "out"), Path(tmp, "err")
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                [*COMMAND, *argv], stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env
            )
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                # wait4, not wait: the rusage of exactly this process (peak RSS of one command).
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = code = os.waitstatus_to_exitcode(status)
        return code, read(out_path.read_bytes()), read(err_path.read_bytes()), usage.ru_maxrss


class CliError(AssertionError):
    """A command answered in a way no caller may see (a traceback, an unexpected exit code)."""


class CampaignCli(Cli):
    """The campaigns' :class:`~tests.cli.cli_support.Cli`: :meth:`run` measures each command's
    own peak RSS and time and never asserts (a campaign counts what went wrong); :meth:`ok`
    raises :class:`CliError` on a non-zero exit; a traceback always raises."""

    def __init__(self, workspace: Path, store: Path) -> None:
        super().__init__(workspace, store)
        self.calls = 0

    def run(self, *args: str, timeout: float = 300) -> Result:
        argv = [*args, "--workspace", str(self.workspace), "--store", str(self.store)]
        self.calls += 1
        started = time.monotonic()
        peak_file = Path(tempfile.mkstemp(prefix="retrace-peak-")[1])
        env = {**self.env, "RETRACE_TEST_PEAK_FILE": str(peak_file)}
        code, out, err, rusage_kb = _run(argv, env, timeout)
        result = Result(code, out, err, _own_peak_kb(peak_file, rusage_kb), time.monotonic() - started)
        if "Traceback" in result.err:
            raise CliError(f"retrace {args[0]} crashed: {result.err.strip().splitlines()[-1][:300]}")
        return result

    def ok(self, *args: str) -> Result:
        result = self.run(*args)
        if result.code != 0:
            raise CliError(f"retrace {' '.join(args[:2])} -> {result.brief()}")
        return result

    def init(self) -> None:
        self.ok("init")

    def checkpoint(self, label: str = "") -> str:
        lines = self.ok("checkpoint", "--label", label).out.split()
        return lines[-1]

    def log(self) -> list[dict[str, Any]]:
        data = self.ok("log", "--json").payload()
        if not isinstance(data, list):
            raise CliError("retrace log --json did not print a list")
        return data

    def restore(self, cp: str, *flags: str) -> tuple[Result, dict[str, Any]]:
        result = self.run("restore", cp, "--json", *flags)
        payload = result.payload()
        return result, payload if isinstance(payload, dict) else {}


def undo_id(result: Result, payload: dict[str, Any]) -> str | None:
    """The checkpoint that holds the workspace as it was just before an applied restore."""
    checkpoint = payload.get("checkpoint")
    if isinstance(checkpoint, dict) and checkpoint.get("parent"):
        return str(checkpoint["parent"])
    found = _UNDO.search(result.out)
    return found.group(1) if found else None


def restored_checkpoint_id(payload: dict[str, Any]) -> str | None:
    checkpoint = payload.get("checkpoint")
    return str(checkpoint["id"]) if isinstance(checkpoint, dict) and checkpoint.get("id") else None


def initialised_cli(tmp_path: Path) -> CampaignCli:
    """A fresh workspace (its name has a space and a non-ASCII letter) with an initialised store."""
    workspace = tmp_path / "wörk space"
    workspace.mkdir()
    (workspace / "README.md").write_text("campaign workspace\n")
    cli = CampaignCli(workspace, tmp_path / "store")
    cli.init()
    return cli


def restore_and_undo(
    cli: CampaignCli, target: str, before: Tree, *, force: bool, expect: Tree | None, refusal_ok: bool = False
) -> str:
    """Restore ``target``; check the result is ``expect`` (when given); undo; check ``before`` is back.

    The undo point is the checkpoint the restore names (the state just before it, unrecorded
    changes included: a safety checkpoint is taken before applying). Returns how the restore
    ended: ``refused`` (a conflict that changed nothing, when ``refusal_ok``) or ``applied``.
    """
    result, payload = cli.restore(target, *(["--force"] if force else []))
    if result.code == CONFLICT and refusal_ok:
        delta = tree_delta(before, entries(cli.workspace))
        assert not delta, f"a refused restore changed the workspace: {delta}"
        return "refused"
    assert result.code == 0, f"restore {target}: {result.brief()}"
    if expect is not None:
        delta = tree_delta(expect, entries(cli.workspace))
        assert not delta, f"restore {target} is not the checkpoint: {delta}"
    if payload.get("kind") == "nothingToRestore":
        assert not tree_delta(before, entries(cli.workspace)), "'nothing to restore' changed the workspace"
        return "nothing"
    undo = undo_id(result, payload)
    assert undo, f"an applied restore names no undo point: {result.out[:200]}"
    back, _ = cli.restore(undo, "--force")
    assert back.code == 0, f"undo restore {undo}: {back.brief()}"
    delta = tree_delta(before, entries(cli.workspace))
    assert not delta, f"restore + undo lost or changed work: {delta}"
    return "applied"


class Tally:
    """Counts and failures of one campaign variant; :meth:`finish` records them, then asserts."""

    def __init__(self, campaign: str, variant: str, seed: int) -> None:
        self.campaign = campaign
        self.variant = variant
        self.seed = seed
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.failures: list[str] = []
        self.started = time.monotonic()

    def fail(self, trial: object, message: str) -> None:
        self.failures.append(f"{trial}: {message}"[:300])

    def trial(self, label: str, body: Any, *args: Any) -> bool:
        """Run one trial; any assertion or command failure becomes a recorded failure."""
        self.counts["trials"] += 1
        try:
            body(*args)
        except (AssertionError, OSError, subprocess.SubprocessError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.fail(label, f"{type(exc).__name__}: {first}")
            return False
        return True

    def control(self, label: str, body: Any, *args: Any) -> None:
        """A trial without the hazard (it must pass today): proves the oracle is not blanket."""
        if self.trial(f"control {label}", body, *args):
            self.counts["controlsPassed"] += 1

    def check(self, label: str, body: Any, *args: Any) -> bool:
        """One check inside a trial: a failure is recorded and the trial goes on. True if it held."""
        self.counts["checks"] += 1
        try:
            body(*args)
        except (AssertionError, OSError, subprocess.SubprocessError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.fail(label, f"{type(exc).__name__}: {first}")
            return False
        return True

    def finish(self, **extra: Any) -> None:
        figures: dict[str, Any] = {
            "seed": self.seed,
            "seconds": round(time.monotonic() - self.started, 1),
            **dict(sorted(self.counts.items())),
            "kinds": dict(sorted(self.kinds.items())),
            "failureCount": len(self.failures),
            "failures": self.failures[:12],
            **extra,
        }
        figures.setdefault("lost", self.counts.get("lost", 0))
        record_figures(self.campaign, self.variant, figures)
        assert not self.failures, (
            f"{self.campaign}/{self.variant} (seed {self.seed}): {len(self.failures)} failures:\n"
            + "\n".join(self.failures[:20])
        )


# --------------------------------------------------------------------------- trees on disk


def clear(root: Path, keep: tuple[str, ...] = ()) -> None:
    """Remove everything inside ``root`` but the names in ``keep`` (links removed, never followed)."""
    for entry in os.scandir(root):
        if entry.name in keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def write_tree(root: Path, truth: Tree) -> None:
    """Make ``root`` hold exactly ``truth`` (files with their bytes and x bit, symlinks)."""
    clear(root)
    for rel, (kind, data, executable) in sorted(truth.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "symlink":
            os.symlink(os.fsdecode(data), path)
        else:
            path.write_bytes(data)
            if executable:
                path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def tree_delta(expected: Tree, actual: Tree, limit: int = 4) -> str:
    """A short description of how ``actual`` differs from ``expected`` (empty when equal)."""
    notes: list[str] = []
    for rel in sorted(set(expected) | set(actual)):
        want, got = expected.get(rel), actual.get(rel)
        if want == got:
            continue
        if got is None:
            notes.append(f"{rel!r} missing")
        elif want is None:
            notes.append(f"{rel!r} unexpected {got[0]}")
        elif want[0] != got[0]:
            notes.append(f"{rel!r} is a {got[0]}, expected a {want[0]}")
        else:
            notes.append(f"{rel!r} differs ({len(got[1])} bytes, expected {len(want[1])})")
    more = f" (+{len(notes) - limit} more)" if len(notes) > limit else ""
    return "; ".join(notes[:limit]) + more


# --------------------------------------------------------------------------- the store's files


def _hexname(path: Path) -> bool:
    return re.fullmatch(r"[0-9a-f]{40,128}(\.[a-z0-9]+)?", path.name) is not None


def blob_files(store: Path) -> list[Path]:
    """Content files of the store: files under a ``blobs``/``objects`` folder, else hash-named files.

    Only the layout's outline is assumed (content-addressed files), not its format.
    """
    files = [p for p in sorted(store.rglob("*")) if p.is_file() and "quarantine" not in p.as_posix()]
    found = [p for p in files if {"blobs", "objects"} & set(p.relative_to(store).parts[:-1])]
    return found or [p for p in files if _hexname(p)]


def journal_files(store: Path) -> list[Path]:
    """The store's journals (line-per-record files)."""
    files = [p for p in sorted(store.rglob("*.jsonl")) if "quarantine" not in p.as_posix()]
    return [p for p in files if "journal" in p.name] or files


def random_text(rng: random.Random, size: int) -> bytes:
    """``size`` bytes of line-structured text (diffable), unique enough to tell versions apart."""
    words = [f"{rng.choice('abcdefghijklmnop')}{rng.randrange(10**6)}" for _ in range(8)]
    chunks: list[str] = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) + "\n"
        chunks.append(line)
        total += len(line)
    return "".join(chunks).encode()[:size]
