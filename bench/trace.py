"""A deterministic trace of agent tool calls to replay against every strategy.

``make_trace(workspace, calls, seed)`` returns ``calls`` steps: mostly single-file edits (replace a
line), some creates, deletes and renames (edit tools: they report their changed paths), and about
15 % shell calls that report nothing and may touch many files (a codemod over 20 files, a
formatter over 100, a mkdir plus new files, ``rm -r`` of a directory, a build that writes only
ignored output, a ``sed`` on a few files, an image optimiser rewriting binaries).
``apply_step`` performs a step's file operations; the same trace applied to the same generated
workspace always yields the same bytes, so every strategy sees identical work.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from bench.workspace import WORDS, Workspace

SHELL_SHARE = 0.15


@dataclass(frozen=True)
class ReplaceLine:
    """Replace line ``line % line_count`` of a text file with ``text``."""

    path: str
    line: int
    text: str


@dataclass(frozen=True)
class WriteFile:
    path: str
    data: bytes


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class Rename:
    src: str
    dst: str


@dataclass(frozen=True)
class RemoveTree:
    path: str


Op = ReplaceLine | WriteFile | DeleteFile | Rename | RemoveTree


@dataclass(frozen=True)
class Step:
    index: int
    """1-based position in the trace (checkpoint 0 is the baseline)."""
    tool: str
    label: str
    ops: tuple[Op, ...]
    changed_paths: tuple[str, ...] | None
    """What an edit tool reports; ``None`` for shell calls (the strategy must detect)."""

    @property
    def kind(self) -> str:
        return "edit" if self.changed_paths is not None else "shell"


def apply_step(root: Path, step: Step) -> None:
    for op in step.ops:
        match op:
            case ReplaceLine(path=path, line=line, text=text):
                target = root / path
                lines = target.read_bytes().split(b"\n")
                lines[line % len(lines)] = text.encode()
                target.write_bytes(b"\n".join(lines))
            case WriteFile(path=path, data=data):
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            case DeleteFile(path=path):
                (root / path).unlink()
            case Rename(src=src, dst=dst):
                (root / dst).parent.mkdir(parents=True, exist_ok=True)
                (root / src).rename(root / dst)
            case RemoveTree(path=path):
                shutil.rmtree(root / path)


class _Sim:
    """The trace generator's model of the tracked tree (paths only; contents stay on disk)."""

    def __init__(self, ws: Workspace, rng: random.Random) -> None:
        self.rng = rng
        # .gitignore stays as it is: editing the ignore rules mid-trace is a different benchmark.
        self.text = sorted(p for p in ws.text_files if p != ".gitignore")
        self.text_set = set(self.text)
        self.binary = sorted(ws.binary_files)
        self.dirs = list(ws.dirs)
        self.new = 0

    def pick_text(self) -> str:
        while True:
            p = self.rng.choice(self.text)
            if p in self.text_set:
                return p

    def pick_many(self, n: int) -> list[str]:
        live = [p for p in self.text if p in self.text_set]
        return self.rng.sample(live, min(n, len(live)))

    def remove(self, path: str) -> None:
        self.text_set.discard(path)

    def add(self, path: str) -> None:
        self.text.append(path)
        self.text_set.add(path)

    def fresh_name(self, directory: str, ext: str = ".py") -> str:
        self.new += 1
        name = f"{self.rng.choice(WORDS)}_new{self.new}{ext}"
        return f"{directory}/{name}" if directory else name

    def content(self, lines: int) -> bytes:
        words = self.rng.choices(WORDS, k=lines * 4)
        body = "".join(
            f"{words[4 * i]} = {words[4 * i + 1]}({words[4 * i + 2]}, {i})\n" for i in range(lines)
        )
        return body.encode()

    def leaf_dir(self) -> str | None:
        parents = {d.rpartition("/")[0] for d in self.dirs}
        with_files = {p.rpartition("/")[0] for p in self.text_set}
        candidates = [d for d in self.dirs if d not in parents and d in with_files]
        return self.rng.choice(candidates) if candidates else None


def _shell_step(sim: _Sim, index: int) -> Step:
    rng = sim.rng
    kind = rng.choices(
        ("codemod", "format", "scaffold", "rmdir", "build", "sed", "images"),
        weights=(25, 15, 20, 10, 12, 13, 5),
    )[0]
    ops: list[Op] = []
    if kind == "codemod":
        old, new = rng.sample(WORDS, 2)
        for path in sim.pick_many(20):
            ops.append(ReplaceLine(path, rng.randrange(1, 200), f"{new}_{index} = migrate({old})  # codemod"))
        return Step(index, "run_command", f"codemod {old} -> {new} ({len(ops)} files)", tuple(ops), None)
    if kind == "format":
        for path in sim.pick_many(100):
            ops.append(ReplaceLine(path, 0, f"# formatted by fmt (step {index})"))
        return Step(index, "run_command", f"formatter over {len(ops)} files", tuple(ops), None)
    if kind == "scaffold":
        base = rng.choice(sim.dirs) if sim.dirs else ""
        new_dir = f"{base}/gen_{index}" if base else f"gen_{index}"
        for _ in range(rng.randint(3, 8)):
            path = sim.fresh_name(f"{new_dir}/{rng.choice(('src', 'tests'))}")
            ops.append(WriteFile(path, sim.content(rng.randint(5, 60))))
            sim.add(path)
        sim.dirs.append(new_dir)
        return Step(
            index, "run_command", f"mkdir -p {new_dir} && scaffold {len(ops)} files", tuple(ops), None
        )
    if kind == "rmdir":
        victim = sim.leaf_dir()
        if victim is not None:
            for p in [p for p in sim.text_set if p.startswith(victim + "/")]:
                sim.remove(p)
            sim.binary = [p for p in sim.binary if not p.startswith(victim + "/")]
            sim.dirs.remove(victim)
            return Step(index, "run_command", f"rm -r {victim}", (RemoveTree(victim),), None)
        kind = "sed"
    if kind == "build":
        for i in range(rng.randint(5, 30)):
            ops.append(WriteFile(f"build/step{index}/chunk{i}.js", sim.content(20)))
        ops.append(WriteFile(f"test-{index}.log", b"collected 42 items\n42 passed\n"))
        return Step(index, "run_command", "npm run build && pytest (ignored output only)", tuple(ops), None)
    if kind == "images" and sim.binary:
        for path in rng.sample(sim.binary, min(3, len(sim.binary))):
            ops.append(WriteFile(path, rng.randbytes(rng.randint(1_000, 30_000))))
        return Step(index, "run_command", f"optimise {len(ops)} images", tuple(ops), None)
    for path in sim.pick_many(rng.randint(1, 3)):
        ops.append(ReplaceLine(path, rng.randrange(200), f"value = {rng.randrange(10**6)}  # sed"))
    return Step(index, "run_command", f"sed -i on {len(ops)} files", tuple(ops), None)


def make_trace(ws: Workspace, calls: int = 200, seed: int = 1) -> list[Step]:
    rng = random.Random(seed * 7919 + ws.tracked_files)
    sim = _Sim(ws, rng)
    steps: list[Step] = []
    # Exactly the share of shell calls, at random positions: small traces still get some.
    shell_at = set(rng.sample(range(1, calls + 1), round(calls * SHELL_SHARE)))
    for index in range(1, calls + 1):
        r = SHELL_SHARE + rng.random() * (1 - SHELL_SHARE)
        if index in shell_at:
            steps.append(_shell_step(sim, index))
        elif r < 0.66:
            path = sim.pick_text()
            op = ReplaceLine(
                path, rng.randrange(400), f"    result_{index} = compute({rng.randrange(10**6)})"
            )
            steps.append(Step(index, "edit_file", f"edit {path}", (op,), (path,)))
        elif r < 0.76:
            directory = rng.choice(sim.dirs) if sim.dirs else ""
            path = sim.fresh_name(directory, rng.choice((".py", ".ts", ".md")))
            sim.add(path)
            steps.append(
                Step(
                    index,
                    "write_file",
                    f"create {path}",
                    (WriteFile(path, sim.content(rng.randint(3, 80))),),
                    (path,),
                )
            )
        elif r < 0.85:
            path = sim.pick_text()
            sim.remove(path)
            steps.append(Step(index, "delete_file", f"delete {path}", (DeleteFile(path),), (path,)))
        else:
            src = sim.pick_text()
            directory = rng.choice(sim.dirs) if rng.random() < 0.3 and sim.dirs else src.rpartition("/")[0]
            dst = sim.fresh_name(directory, Path(src).suffix or ".txt")
            sim.remove(src)
            sim.add(dst)
            steps.append(
                Step(index, "rename_file", f"rename {src} -> {dst}", (Rename(src, dst),), (src, dst))
            )
    return steps
