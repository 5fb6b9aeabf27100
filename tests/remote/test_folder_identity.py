"""The per-folder remote name rule and the store-card check (pure, table-tested)."""

from __future__ import annotations

import pytest

from retrace.sync.config import check_workspace_name
from retrace.sync.errors import RemoteError
from retrace.sync.identity import check_card, folder_workspace_names

CASES = [
    # explicit name, folders (name, directory) → expected names (None: sync off), in order
    ("shared", [("api", "api")], ["shared"]),
    (None, [("api", "api")], ["api"]),
    (None, [("My App", "my app")], ["my-app"]),
    ("shared", [("api", "api"), ("web", "web")], ["shared", "shared/web"]),
    (None, [("api", "api"), ("web", "web-dir")], ["api", "web"]),
    (None, [("api", "api"), ("api", "api")], ["api", None]),  # second of the same name: off
    (None, [("x", "api"), ("api", "y")], ["api", None]),  # the first's directory name is taken
    ("shared", [("a", "a"), ("packs", "packs")], ["shared", None]),
    ("shared", [("a", "a"), ("web app", "w"), ("web-app", "w2")], ["shared", "shared/web-app", None]),
    ("shared", [("a", "a"), ("b", "b"), ("a", "c")], ["shared", "shared/b", "shared/a"]),
    ("shared", [("a", "a"), ("b", "b"), ("b", "c")], ["shared", "shared/b", None]),
]


@pytest.mark.parametrize(("explicit", "folders", "expected"), CASES)
def test_folder_names(
    explicit: str | None, folders: list[tuple[str, str]], expected: list[str | None]
) -> None:
    got = folder_workspace_names(explicit, folders)
    assert [v.name for v in got] == expected
    for v in got:
        assert (v.name is None) == (v.error is not None)
        if v.name is not None:
            assert check_workspace_name(v.name) == v.name


@pytest.mark.parametrize("bad", ["", "/", "a//b", "a/../b", "a/.", "a b", "a/b c"])
def test_bad_workspace_names_are_refused(bad: str) -> None:
    with pytest.raises(RemoteError):
        check_workspace_name(bad)


CARDS = [
    ({}, "w", "f", True),
    ({"workspaceName": "w"}, "w", "f", True),
    ({"workspaceName": "w", "folder": "f"}, "w", "f", True),
    ({"workspaceName": "w", "folder": "g"}, "w", None, True),  # this store knows no folder
    ({"workspaceName": "w"}, "w", None, True),
    ({"workspaceName": "v"}, "w", None, False),
    ({"workspaceName": "w", "folder": "g"}, "w", "f", False),
    ({"folder": "g"}, "w", "f", False),
]


@pytest.mark.parametrize(("card", "name", "folder", "ok"), CARDS)
def test_card_check(card: dict[str, str], name: str, folder: str | None, ok: bool) -> None:
    if ok:
        check_card(card, name, folder, "s", "st")
    else:
        with pytest.raises(RemoteError, match="not opened here"):
            check_card(card, name, folder, "s", "st")
