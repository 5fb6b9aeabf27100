"""Which workspace folder owns a path (``engine.folders.FolderRouter``): pure tables.

One folder behaves exactly as the single-folder rule (``normalize_rel`` against it); several
folders: an absolute path goes to the innermost folder holding it, a relative one must start
with a folder's name; two folders with one name are told apart only by their absolute paths;
a path outside every folder (or in a folder that was removed) gets today's refusal.
"""

from __future__ import annotations

import pytest

from retrace.engine.folders import AmbiguousFolderName, Folder, FolderRouter, folder_name
from retrace.engine.workspace import EscapeError, normalize_rel

WEB = Folder("web", "/w/web")
API = Folder("api", "/w/api")
OUTER = Folder("mono", "/m")
INNER = Folder("pkg", "/m/packages/pkg")
TWIN_A = Folder("app", "/a/app")
TWIN_B = Folder("app", "/b/app")

ROUTES = [
    # folders, path, expected (folder root, rel)
    ([WEB], "src/x.py", ("/w/web", "src/x.py")),
    ([WEB], "web/x.py", ("/w/web", "web/x.py")),  # one folder: relative is relative, as today
    ([WEB], "/w/web/a/b.txt", ("/w/web", "a/b.txt")),
    ([WEB, API], "/w/api/main.go", ("/w/api", "main.go")),
    ([WEB, API], "/w/web/./src/../src/i.ts", ("/w/web", "src/i.ts")),
    ([WEB, API], "api/main.go", ("/w/api", "main.go")),
    ([WEB, API], "web/src/i.ts", ("/w/web", "src/i.ts")),
    ([WEB, API], "./api//main.go", ("/w/api", "main.go")),
    ([OUTER, INNER], "/m/packages/pkg/lib.py", ("/m/packages/pkg", "lib.py")),  # innermost wins
    ([INNER, OUTER], "/m/packages/pkg/lib.py", ("/m/packages/pkg", "lib.py")),  # whatever the order
    ([OUTER, INNER], "/m/packages/other/lib.py", ("/m", "packages/other/lib.py")),
    ([OUTER, INNER], "mono/packages/pkg/lib.py", ("/m/packages/pkg", "lib.py")),  # by name, then innermost
    ([OUTER, INNER], "/m/packages/pkgx/y", ("/m", "packages/pkgx/y")),  # a prefix is no folder
    ([TWIN_A, TWIN_B], "/b/app/x", ("/b/app", "x")),
    ([TWIN_A, TWIN_B, WEB], "web/x", ("/w/web", "x")),
]


@pytest.mark.parametrize(("folders", "path", "expected"), ROUTES)
def test_route(folders: list[Folder], path: str, expected: tuple[str, str]) -> None:
    routed = FolderRouter(folders, windows=False).route(path)
    assert (routed.folder.root, routed.rel) == expected


REFUSED = [
    # folders, path, error class, words in the message
    ([WEB, API], "/w/other/x", EscapeError, "outside the workspace"),
    ([WEB, API], "/w/web", EscapeError, "not a path inside"),  # a folder itself is no file
    ([WEB, API], "src/x.py", EscapeError, "start with a folder's name"),
    ([WEB, API], "api", EscapeError, "not a path inside"),
    ([WEB, API], "api/../web/x", EscapeError, "not a path inside"),
    ([WEB, API], "../web/x", EscapeError, "not a path inside"),
    ([WEB, API], "web/\x00", EscapeError, "not a path inside"),
    ([WEB, API], "", EscapeError, "not a path inside"),
    ([TWIN_A, TWIN_B], "app/x", AmbiguousFolderName, "absolute path"),
    ([], "x", EscapeError, "no workspace folder"),
    ([], "/w/web/x", EscapeError, "no workspace folder"),
]


@pytest.mark.parametrize(("folders", "path", "error", "words"), REFUSED)
def test_refused(folders: list[Folder], path: str, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        FolderRouter(folders, windows=False).route(path)


def test_outside_every_folder_is_todays_refusal() -> None:
    """The same one-line error a single folder gives today, word for word."""
    with pytest.raises(EscapeError) as today:
        normalize_rel("/elsewhere/x", "/w/web", windows=False)
    with pytest.raises(EscapeError) as now:
        FolderRouter([WEB, API], windows=False).route("/elsewhere/x")
    assert str(now.value) == str(today.value)


def test_removed_folder_is_outside() -> None:
    """A folder removed while a turn runs: the new router refuses its paths, the old one (the
    turn's snapshot) is unchanged — routers never change."""
    before = FolderRouter([WEB, API, OUTER], windows=False)
    after = before.without("/w/api")
    assert before.route("/w/api/x").folder == API
    with pytest.raises(EscapeError, match="outside the workspace"):
        after.route("/w/api/x")
    with pytest.raises(EscapeError):
        after.route("api/x")
    assert after.folders == (WEB, OUTER)
    assert after.with_folder(API).folders == (WEB, OUTER, API)
    assert before.with_folder(API) is before  # adding a known root is a no-op
    # Down to one folder: the single-folder rule again (relative means relative to it).
    assert after.without("/m").route("api/x").rel == "api/x"


def test_windows_rules() -> None:
    """Windows: ``\\`` separates, letter case is ignored for the roots and the names."""
    router = FolderRouter([Folder("Web", "C:\\w\\Web"), Folder("Api", "C:\\w\\Api")], windows=True)
    routed = router.route("c:\\W\\api\\Main.go")
    assert (routed.folder.name, routed.rel) == ("Api", "Main.go")
    assert router.route("web\\src\\i.ts").rel == "src/i.ts"
    with pytest.raises(EscapeError):
        router.route("web\\con.txt")  # a reserved name, as the single-folder rule says


LOOKUPS = [
    ("/w/api", "/w/api"),
    ("api", "/w/api"),
    ("/w/web/", "/w/web"),
    ("/b/app", "/b/app"),
]


@pytest.mark.parametrize(("key", "root"), LOOKUPS)
def test_folder_by_key(key: str, root: str) -> None:
    assert FolderRouter([WEB, API, TWIN_A, TWIN_B], windows=False).folder(key).root == root


@pytest.mark.parametrize("key", ["app", "nope", "/w", "", "/w/api/x"])
def test_folder_by_key_refused(key: str) -> None:
    with pytest.raises(EscapeError):
        FolderRouter([WEB, API, TWIN_A, TWIN_B], windows=False).folder(key)


@pytest.mark.parametrize(
    ("root", "name"), [("/w/web", "web"), ("/w/web/", "web"), ("/", "/"), ("C:\\x\\Proj", "Proj")]
)
def test_folder_name(root: str, name: str) -> None:
    assert folder_name(root, windows="\\" in root) == name


OVERLAPS = [
    ([WEB, API], Folder("x", "/w/other"), None),
    ([WEB, API], Folder("sub", "/w/web/sub"), "/w/web"),  # inside a folder
    ([INNER], Folder("mono", "/m"), "/m/packages/pkg"),  # holding a folder
    ([WEB], Folder("web2", "/w/web"), None),  # the same root: not an overlap (a duplicate)
    ([WEB], Folder("webx", "/w/webx"), None),  # a shared prefix is no nesting
    ([WEB], Folder("w", "/w"), "/w/web"),
]


@pytest.mark.parametrize(("folders", "new", "overlap"), OVERLAPS)
def test_overlapping(folders: list[Folder], new: Folder, overlap: str | None) -> None:
    found = FolderRouter(folders, windows=False).overlapping(new)
    assert (found.root if found else None) == overlap


REL_IN = [
    # folders, path, the folder asked about, expected rel (None: not that folder's)
    ([WEB, API], "/w/api/main.go", "/w/api", "main.go"),
    ([WEB, API], "/w/api/main.go", "/w/web", None),  # another folder's file, same name or not
    ([WEB, API], "/w/web/main.go", "/w/api", None),
    ([WEB, API], "/w/api/../web/x", "/w/api", None),  # `..` resolves out of api
    ([WEB, API], "/w/other/x", "/w/web", None),  # outside every folder
    ([WEB, API], "/w/api", "/w/api", None),  # the folder itself is no file
    ([WEB, API], "api/main.go", "/w/api", "main.go"),
    ([WEB, API], "/w/api/\x00", "/w/api", None),
    ([OUTER, INNER], "/m/packages/pkg/lib.py", "/m", None),  # the innermost folder owns it
    ([OUTER, INNER], "/m/packages/pkg/lib.py", "/m/packages/pkg", "lib.py"),
    ([OUTER, INNER], "/m/packages/pkgx/y", "/m", "packages/pkgx/y"),
    ([TWIN_A, TWIN_B], "/b/app/x", "/a/app", None),  # twins told apart by their roots
    ([TWIN_A, TWIN_B], "/b/app/x", "/b/app/", "x"),
    ([WEB], "/w/web/src/a", "/w/web", "src/a"),
    ([], "/w/web/src/a", "/w/web", None),
]


@pytest.mark.parametrize(("folders", "path", "root", "expected"), REL_IN)
def test_rel_in(folders: list[Folder], path: str, root: str, expected: str | None) -> None:
    assert FolderRouter(folders, windows=False).rel_in(path, root) == expected


def test_rel_in_windows() -> None:
    router = FolderRouter([Folder("web", "C:\\w\\web"), Folder("api", "C:\\w\\api")], windows=True)
    assert router.rel_in("c:\\W\\API\\Main.go", "C:\\w\\api") == "Main.go"
    assert router.rel_in("C:\\w\\api\\main.go", "c:\\w\\web") is None
    assert router.rel_in("C:\\w\\api\\CON", "C:\\w\\api") is None  # a reserved name is no path
