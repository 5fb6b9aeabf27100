"""Multi-root workspaces and remote sync, against a real S3 server: each folder's store syncs
under its own key prefix (:mod:`retrace.sync.identity`), and a session pushed by one folder is
never opened or pulled into another (clear error, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.oracles import file_bytes
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.sync import RemoteService
from retrace.sync.errors import RemoteError
from retrace.sync.identity import folder_workspace_names
from retrace.sync.objects import Bucket


def folder_service(m: Machine, workspace_name: str, folder: str | None) -> RemoteService:
    svc = m.service()
    svc.add("origin", m.s3.url(), endpoint=m.s3.endpoint, workspace_name=workspace_name, folder=folder)
    return svc


def record(m: Machine, session: str, text: str) -> None:
    (m.ws / "f.txt").write_text(text)
    with m.engine(session) as eng:
        eng.checkpoint(text)


def test_two_folders_push_each_under_its_own_prefix(tmp_path: Path, s3: S3Server) -> None:
    api, web = Machine.make(tmp_path, s3, "api"), Machine.make(tmp_path, s3, "web")
    names = folder_workspace_names("shared", [("api", "api"), ("web", "web")])
    record(api, "s-api", "api one\n")
    record(web, "s-web", "web one\n")
    assert [n.name for n in names] == ["shared", "shared/web"]
    svc_api = folder_service(api, "shared", "api")
    svc_web = folder_service(web, "shared/web", "web")
    svc_api.push()
    svc_web.push()
    keys = list(s3.objects())
    api_keys = [k for k in keys if k.startswith("team/shared/") and not k.startswith("team/shared/web/")]
    web_keys = [k for k in keys if k.startswith("team/shared/web/")]
    assert api_keys and web_keys and len(api_keys) + len(web_keys) == len(keys)
    assert any("/sessions/s-api/" in k for k in api_keys) and not any("s-web" in k for k in api_keys)
    assert any("/sessions/s-web/" in k for k in web_keys) and not any("s-api" in k for k in web_keys)
    assert [s.session_id for s in svc_api.sessions()] == ["s-api"]
    assert [s.session_id for s in svc_web.sessions()] == ["s-web"]


def test_opening_another_folders_session_is_refused_and_writes_nothing(tmp_path: Path, s3: S3Server) -> None:
    api, web = Machine.make(tmp_path, s3, "api"), Machine.make(tmp_path, s3, "web")
    record(api, "s-api", "api one\n")
    folder_service(api, "shared", "api").push()
    record(web, "s-web", "web one\n")
    # The web folder's remote points at the api folder's prefix (a hand-made or stale configuration).
    svc_web = folder_service(web, "shared", "web")
    assert "s-api" in [s.session_id for s in svc_web.sessions()]
    before = file_bytes(web.store)
    with pytest.raises(RemoteError, match=r"folder 'api', not this folder 'web'"):
        svc_web.open("s-api")
    after = file_bytes(web.store)
    # Listing cached the store card; nothing else changed: no journal, no import record.
    assert {k: v for k, v in after.items() if "/cards/" not in k} == before
    assert not web.store.joinpath("sessions", "s-api").exists()


def test_pulling_into_another_folder_is_refused_and_leaves_the_session(tmp_path: Path, s3: S3Server) -> None:
    api, web = Machine.make(tmp_path, s3, "api"), Machine.make(tmp_path, s3, "web")
    record(api, "s-api", "api one\n")
    svc_api = folder_service(api, "shared", "api")
    svc_api.push()
    legacy = folder_service(web, "shared", None)  # before folders were told apart: it was opened
    legacy.open("s-api")
    journal = web.store / "sessions" / "s-api" / "journal.jsonl"
    opened = journal.read_bytes()
    record(api, "s-api", "api two\n")
    svc_api.push()
    svc_web = folder_service(web, "shared", "web")
    report = svc_web.pull()
    assert report.segments == 0 and any("folder 'api'" in line for line in report.skipped)
    assert journal.read_bytes() == opened


def test_a_card_of_another_workspace_name_is_refused(tmp_path: Path, s3: S3Server) -> None:
    api, web = Machine.make(tmp_path, s3, "api"), Machine.make(tmp_path, s3, "web")
    record(api, "s-api", "api one\n")
    svc_api = folder_service(api, "shared", None)
    svc_api.push()
    svc_web = folder_service(web, "other", None)
    # Objects copied under another prefix keep their card, which names where they were pushed.
    source, target = (Bucket(svc.remotes()[0], s3.env()) for svc in (svc_api, svc_web))
    for key in list(s3.objects()):
        rel = key.removeprefix("team/shared/")
        target.put(rel, source.get(rel, limit=1 << 30))
    with pytest.raises(RemoteError, match=r"workspace 'shared', not 'other'"):
        svc_web.open("s-api")
    assert not web.store.joinpath("sessions", "s-api").exists()


def test_the_same_folder_on_another_machine_opens_it(tmp_path: Path, s3: S3Server) -> None:
    one, two = Machine.make(tmp_path, s3, "one"), Machine.make(tmp_path, s3, "two")
    record(one, "s-web", "web one\n")
    folder_service(one, "shared/web", "web").push()
    report = folder_service(two, "shared/web", "web").open("s-web")
    assert report.checkpoints >= 1


def test_a_store_told_its_folder_pushes_its_card_again(tmp_path: Path, s3: S3Server) -> None:
    api, web = Machine.make(tmp_path, s3, "api"), Machine.make(tmp_path, s3, "web")
    record(api, "s-api", "api one\n")
    folder_service(api, "shared", None).push()  # a card that names no folder
    svc_api = folder_service(api, "shared", "api")  # the workspace got a second folder
    svc_api.push()
    with pytest.raises(RemoteError, match=r"folder 'api', not this folder 'web'"):
        folder_service(web, "shared", "web").open("s-api")


def test_a_card_cached_before_the_store_was_told_its_folder_is_read_again(
    tmp_path: Path, s3: S3Server
) -> None:
    api, web = Machine.make(tmp_path, s3, "api"), Machine.make(tmp_path, s3, "web")
    record(api, "s-api", "api one\n")
    folder_service(api, "shared", None).push()
    svc_web = folder_service(web, "shared", "web")
    assert "s-api" in {s.session_id for s in svc_web.sessions()}  # caches the card (no folder)
    folder_service(api, "shared", "api").push()  # the card again, naming the folder
    with pytest.raises(RemoteError, match=r"folder 'api', not this folder 'web'"):
        svc_web.open("s-api")
