"""The server's remote configuration (no network): the ``retrace.remote.*`` settings mirrored into
the store's ``remote.json`` (blank fields unset, nothing rewritten when unchanged), a remote the
CLI added used when it is the only one, and never a credential in the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrace.lsp.services.remote import ServerRemote
from retrace.protocol.remote import RemoteSettings, RemoteSyncView
from retrace.sync import RemoteService


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, (None, None, None)),
        ({"url": "", "endpoint": " ", "region": ""}, (None, None, None)),
        (
            {"url": "s3://b/p", "endpoint": "http://127.0.0.1:9", "region": "eu-west-1"},
            ("s3://b/p", "http://127.0.0.1:9", "eu-west-1"),
        ),
    ],
)
def test_blank_settings_are_unset(raw: dict[str, str], expected: tuple[str | None, ...]) -> None:
    settings = RemoteSettings.model_validate(raw)
    assert (settings.url, settings.endpoint, settings.region) == expected


def prepared(tmp_path: Path, settings: RemoteSettings) -> tuple[ServerRemote, list[RemoteSyncView]]:
    views: list[RemoteSyncView] = []
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    sync = ServerRemote.prepare(tmp_path / "store", workspace, settings, views.append, lambda _c: None)
    return sync, views


def test_settings_are_mirrored_into_the_store_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-in-any-file-0123456789")
    settings = RemoteSettings(url="s3://bucket/team", endpoint="http://127.0.0.1:9", workspace_name="proj")
    sync, _ = prepared(tmp_path, settings)
    assert sync.remote == "origin"
    config_file = tmp_path / "store" / "remote.json"
    text = config_file.read_text("utf-8")
    assert "s3://bucket/team" in text and "not-in-any-file" not in text
    before = config_file.stat().st_mtime_ns
    sync.apply(settings)  # unchanged: not rewritten
    assert config_file.stat().st_mtime_ns == before
    sync.apply(settings.model_copy(update={"endpoint": "http://127.0.0.1:10"}))
    assert json.loads(config_file.read_text("utf-8")) != json.loads(text)


def test_a_remote_the_cli_added_is_used_when_it_is_the_only_one(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    RemoteService(tmp_path / "store", workspace).add("backup", "s3://bucket/x", endpoint="http://127.0.0.1:9")
    sync, _ = prepared(tmp_path, RemoteSettings())
    assert sync.remote == "backup"


def test_no_remote_means_no_scheduler(tmp_path: Path) -> None:
    sync, views = prepared(tmp_path, RemoteSettings())
    sync.start()
    assert sync.remote is None and sync.scheduler is None
    assert views[-1].state == "off"
    assert sync.blob_source() is None


def test_a_bad_remote_setting_turns_sync_off_and_never_fails_the_start(tmp_path: Path) -> None:
    sync, _ = prepared(tmp_path, RemoteSettings(url="ftp://not-a-bucket"))
    assert sync.remote is None
    assert sync.blob_source() is None
