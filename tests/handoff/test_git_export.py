"""``retrace export``: a checkpoint as a commit on a new branch, a range as a patch series.

Real git, real files, the real CLI as a subprocess. Every export must leave the user's status,
index file, HEAD and current branch byte-identical (also with staged and unstaged changes), and
the exported tree must equal the checkpoint's manifest (paths, modes, blob ids).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.cli.cli_support import RETRACE, Cli
from tests.handoff.git_support import commit_all, git, init_repo, ls_tree, manifest_tree, untouchables

pytestmark = pytest.mark.slow


def one_error_line(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("retrace: error: ") and needle in lines[0], lines[0]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "README.md").write_text("# demo\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\x00compiled")  # ignored but committed (forced)
    (root / "old.txt").write_text("to be deleted\n")
    commit_all(root, "initial")
    return root


@pytest.fixture
def cli(repo: Path, tmp_path: Path) -> Cli:
    assert RETRACE.exists()
    c = Cli(repo, tmp_path / "store")
    c.env = {k: v for k, v in c.env.items() if not k.startswith("GIT_")}  # no git identity
    c("init")
    return c


def edit_and_checkpoint(repo: Path, cli: Cli) -> str:
    (repo / "src" / "app.py").write_text("def main():\n    return 2\n")
    (repo / "new.txt").write_text("new file\n")
    (repo / "old.txt").unlink()
    tool = repo / "tool.sh"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    (repo / "link").symlink_to("README.md")
    return cli("checkpoint", "--label", "agent work").stdout.strip()


def user_changes(repo: Path) -> None:
    """A staged and an unstaged change of the user's, present while exporting."""
    (repo / "README.md").write_text("# demo\nstaged line\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("# demo\nstaged line\nunstaged line\n")


def test_export_tree_equals_the_checkpoint_and_nothing_of_the_user_moves(repo: Path, cli: Cli) -> None:
    cp = edit_and_checkpoint(repo, cli)
    user_changes(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    before = untouchables(repo)
    out = cli.json("export", cp, "--branch", "retrace/try")
    assert untouchables(repo) == before
    assert out["branch"] == "retrace/try" and out["base"] == head
    assert git(repo, "rev-parse", "refs/heads/retrace/try").strip() == out["commit"]
    assert git(repo, "rev-parse", f"{out['commit']}^").strip() == head
    tree = ls_tree(repo, out["commit"])
    expected = manifest_tree(cli, cp, repo)
    # Everything the checkpoint holds, nothing it deleted, and the ignored committed file kept.
    assert {p: v for p, v in tree.items() if p != "build/out.bin"} == expected
    assert tree["build/out.bin"] == ls_tree(repo, head)["build/out.bin"]
    assert tree["tool.sh"][0] == "100755" and tree["link"][0] == "120000"
    assert "old.txt" not in tree
    assert git(repo, "cat-file", "-p", f"{out['commit']}:link") == "README.md"
    # No git identity configured: the fallback, said in the message.
    body = git(repo, "log", "-1", "--format=%an <%ae>%n%B", out["commit"])
    assert body.startswith("Retrace <retrace@localhost>")
    assert "No git identity is configured" in body and cp in body


def test_author_message_and_base(repo: Path, cli: Cli) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "README.md").write_text("# demo\nsecond\n")
    second = commit_all(repo, "second")
    cp = edit_and_checkpoint(repo, cli)
    out = cli.json(
        "export",
        cp,
        "--branch",
        "feature/x",
        "--message",
        "Add things",
        "--author",
        "Ann Other <ann@example.org>",
        "--base",
        first,
    )
    assert out["base"] == first != second
    log = git(repo, "log", "-1", "--format=%an <%ae>|%s", out["commit"]).strip()
    assert log == "Ann Other <ann@example.org>|Add things"


def test_an_existing_branch_is_refused_never_moved(repo: Path, cli: Cli) -> None:
    cp = edit_and_checkpoint(repo, cli)
    git(repo, "branch", "taken")
    taken = git(repo, "rev-parse", "refs/heads/taken")
    before = untouchables(repo)
    one_error_line(cli("export", cp, "--branch", "taken", code=1), "already exists")
    one_error_line(cli("export", cp, "--branch", "main", code=1), "already exists")
    assert git(repo, "rev-parse", "refs/heads/taken") == taken
    assert untouchables(repo) == before


@pytest.mark.parametrize("name", ["bad..name", "-x", "a b", "end.lock", "@{-1}", "x~1"])
def test_bad_branch_names_are_refused(repo: Path, cli: Cli, name: str) -> None:
    cp = edit_and_checkpoint(repo, cli)
    refs = git(repo, "for-each-ref")
    one_error_line(cli("export", cp, f"--branch={name}", code=1), "invalid branch name")
    assert git(repo, "for-each-ref") == refs


def test_unknown_checkpoint_is_refused(repo: Path, cli: Cli) -> None:
    refs = git(repo, "for-each-ref")
    one_error_line(cli("export", "zzzzzzzz", "--branch", "x", code=1), "unknown checkpoint")
    assert git(repo, "for-each-ref") == refs


def test_a_folder_outside_git_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    c = Cli(ws, tmp_path / "store2")
    c.env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    c("init")
    one_error_line(c("export", "head", "--branch", "x", code=1), "not a git repository")


def test_a_damaged_blob_refuses_with_no_commit(repo: Path, cli: Cli) -> None:
    cp = edit_and_checkpoint(repo, cli)
    objects_before = git(repo, "count-objects", "-v")
    for blob in (cli.store / "blobs").rglob("*"):
        if blob.is_file():
            blob.write_bytes(b"garbage")
    refs = git(repo, "for-each-ref")
    proc = cli("export", cp, "--branch", "x", code=1)
    assert "damaged" in proc.stderr or "cannot export" in proc.stderr, proc.stderr
    assert git(repo, "for-each-ref") == refs
    assert git(repo, "count-objects", "-v") == objects_before


def test_workspace_in_a_subfolder(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "mono")
    (root / "other").mkdir()
    (root / "other" / "keep.txt").write_text("not ours\n")
    ws = root / "pkg"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    base = commit_all(root, "mono")
    c = Cli(ws, tmp_path / "store3")
    c("init")
    (ws / "a.txt").write_text("a2\n")
    (ws / "b.txt").unlink()
    cp = c("checkpoint").stdout.strip()
    before = untouchables(root)
    out = c.json("export", cp, "--branch", "sub")
    assert untouchables(root) == before
    tree = ls_tree(root, out["commit"])
    assert tree["other/keep.txt"] == ls_tree(root, base)["other/keep.txt"]
    assert "pkg/b.txt" not in tree
    assert git(root, "cat-file", "-p", f"{out['commit']}:pkg/a.txt") == "a2\n"
    assert set(ls_tree(root, out["commit"], "pkg/")) == set(manifest_tree(c, cp, root))


def test_unborn_head_gives_a_root_commit(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    (root / "a.txt").write_text("a\n")
    c = Cli(root, tmp_path / "store4")
    c("init")
    before = untouchables(root)
    out = c.json("export", "head", "--branch", "first")
    assert out["base"] is None
    assert git(root, "rev-list", "--count", out["commit"]).strip() == "1"
    assert untouchables(root) == before
    assert set(ls_tree(root, out["commit"])) == {"a.txt"}


def test_patch_series_applies_with_git_am_onto_the_base(repo: Path, cli: Cli, tmp_path: Path) -> None:
    a = cli("checkpoint", "--label", "start").stdout.strip()
    (repo / "src" / "app.py").write_text("def main():\n    return 2\n")
    cli("checkpoint", "--label", "one")
    (repo / "old.txt").unlink()
    (repo / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    exe = repo / "tool.sh"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    (repo / "link").symlink_to("README.md")
    b = cli("checkpoint", "--label", "two").stdout.strip()
    user_changes(repo)
    before = untouchables(repo)
    out_dir = tmp_path / "patches"
    res = cli.json("export", f"{a}..{b}", "--patch", str(out_dir))
    assert untouchables(repo) == before
    assert len(res["patches"]) == 2 and all(Path(p).is_file() for p in res["patches"])
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "am", "-q", *res["patches"])
    expected = manifest_tree(cli, b, repo)
    got = ls_tree(clone, "HEAD")
    assert {p: v for p, v in got.items() if p != "build/out.bin"} == expected


def test_patch_range_needs_patch_and_ancestry(repo: Path, cli: Cli, tmp_path: Path) -> None:
    a = cli("checkpoint", "--label", "a").stdout.strip()
    one_error_line(cli("export", f"{a}..head", "--branch", "x", code=1), "needs --patch")
    (repo / "README.md").write_text("# changed\n")
    b = cli("checkpoint", "--label", "b").stdout.strip()
    one_error_line(cli("export", f"{b}..{a}", "--patch", str(tmp_path / "p"), code=1), "not an ancestor")


def test_headless_run_mirrors_each_turn_onto_its_session_ref(repo: Path, cli: Cli) -> None:
    cli.env = {k: v for k, v in cli.env.items() if not k.startswith("ANTHROPIC_")}
    cli.env["RETRACE_FAKE_MODEL"] = "e2e"
    before = untouchables(repo)
    first = cli("run", "make the e2e changes", "--mirror-git")
    sid = next(ln.split()[1] for ln in first.stdout.splitlines() if ln.startswith("session "))
    ref = f"refs/heads/retrace/{sid}"
    one = git(repo, "rev-parse", ref).strip()
    assert f"git mirror {ref} {one}" in first.stdout
    assert git(repo, "rev-parse", f"{one}^").strip() == git(repo, "rev-parse", "HEAD").strip()
    assert ls_tree(repo, one) != ls_tree(repo, "HEAD")
    (repo / "README.md").write_text("# demo\nuser edit between turns\n")
    cli("run", "anything else", "--session", sid, "--mirror-git")
    two = git(repo, "rev-parse", ref).strip()
    assert two != one and git(repo, "rev-parse", f"{two}^").strip() == one
    assert git(repo, "show", f"{two}:README.md") == "# demo\nuser edit between turns\n"
    after = untouchables(repo)
    assert (
        after["index"] == before["index"]
        and after["HEAD"] == before["HEAD"]
        and after["ref"] == before["ref"]
    )
