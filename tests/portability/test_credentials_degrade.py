"""Platform-only credential protections degrade explicitly (a log line), never silently or by
crashing: non-dumpable (Linux ``prctl``) and the re-exec without the key (POSIX ``execve``)."""

from __future__ import annotations

import logging

import pytest

from retrace import credentials


def test_non_linux_says_the_process_stays_dumpable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(credentials.sys, "platform", "darwin")
    with caplog.at_level(logging.INFO, logger=credentials.__name__):
        credentials._deny_dumping()
    assert "Linux-only" in caplog.text and "darwin" in caplog.text


def test_windows_removes_the_key_without_exec_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_exec(*args: object) -> None:
        raise AssertionError("no exec on Windows")

    monkeypatch.setattr(credentials.os, "name", "nt")
    monkeypatch.setattr(credentials.os, "execve", no_exec)
    monkeypatch.setattr(credentials, "_held", {})
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-windows")
    with caplog.at_level(logging.INFO, logger=credentials.__name__):
        credentials.secure_process_start()
    assert credentials.get("ANTHROPIC_API_KEY") == "sk-test-windows"
    assert "ANTHROPIC_API_KEY" not in credentials.child_env()
    assert "needs exec" in caplog.text
