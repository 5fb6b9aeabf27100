"""What a missing cloud package tells whom: the extension's probe asks ``missing_extra`` which
extra the configured provider lacks (one table, ``cloud._NEEDS``, matching pyproject's extras and
the committed ``server/requirements-<extra>.lock``); the message a user reads names what *they*
can do: a VS Code user of the managed environment runs a Retrace command, anyone else pip-installs."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tests.release.probe_support import probe_script

from retrace.agent.model import cloud

ROOT = Path(__file__).resolve().parents[2]


def cloud_extras() -> set[str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    return {name for name in extras if name != "dev"}


def test_the_provider_table_is_the_set_of_pyproject_extras_each_with_its_lock() -> None:
    assert set(cloud.EXTRAS) == cloud_extras() == {"bedrock", "vertex"}
    for extra in cloud_extras():
        assert (ROOT / "server" / f"requirements-{extra}.lock").is_file(), (
            f"run scripts/lock.sh for [{extra}]"
        )
    stale = {p.name for p in (ROOT / "server").glob("requirements-*.lock")} - {
        f"requirements-{e}.lock" for e in cloud_extras()
    }
    assert not stale, stale


@pytest.mark.parametrize(
    ("provider", "module"), [("bedrock", "boto3"), ("bedrock", "botocore"), ("vertex", "google.auth")]
)
def test_missing_extra_names_the_provider_whose_module_is_absent(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str
) -> None:
    assert cloud.missing_extra(provider) is None
    monkeypatch.setitem(sys.modules, module, None)
    assert cloud.missing_extra(provider) == provider
    other = ({"bedrock", "vertex"} - {provider}).pop()
    assert cloud.missing_extra(other) is None


@pytest.mark.parametrize(
    "provider", ["anthropic", "openai-compatible", "vscode-lm", "", "Bedrock", "../x", "dev"]
)
def test_no_extra_for_any_other_provider_name(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    monkeypatch.setitem(sys.modules, "google.auth", None)
    assert cloud.missing_extra(provider) is None


def nls_title(command: str) -> str:
    nls = json.loads((ROOT / "package.nls.json").read_text("utf-8"))
    return f"{nls['command.category']}: {nls[f'command.retrace.{command}.title']}"


def test_the_commands_the_message_names_exist_under_those_titles() -> None:
    assert nls_title("chooseModelProvider") == cloud.CHOOSE_PROVIDER_COMMAND
    assert nls_title("installServer") == cloud.REBUILD_ENV_COMMAND
    ts = (ROOT / "extension" / "src" / "client" / "serverEnv.ts").read_text("utf-8")
    assert f"export const ENV_MARKER = '{cloud.MANAGED_ENV_MARKER}';" in ts


@pytest.mark.parametrize(("provider", "module"), [("bedrock", "boto3"), ("vertex", "google.auth")])
def test_in_the_extensions_environment_the_message_names_the_commands_not_pip(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, provider: str, module: str
) -> None:
    (tmp_path / cloud.MANAGED_ENV_MARKER).write_text("{}", "utf-8")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setitem(sys.modules, module, None)
    message = cloud.missing_package(provider)
    assert message is not None
    assert cloud.CHOOSE_PROVIDER_COMMAND in message and cloud.REBUILD_ENV_COMMAND in message
    assert "pip install" not in message and module in message


@pytest.mark.parametrize(("provider", "module"), [("bedrock", "boto3"), ("vertex", "google.auth")])
def test_elsewhere_the_message_names_the_pip_command_and_the_python(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, provider: str, module: str
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # no marker: a Python the user manages
    monkeypatch.setitem(sys.modules, module, None)
    message = cloud.missing_package(provider)
    assert message is not None
    assert cloud.install_hint(provider) in message and sys.executable in message
    assert "retrace.pythonPath" in message and cloud.CHOOSE_PROVIDER_COMMAND not in message


def run_probes(*cases: tuple[list[str], str]) -> list[dict[str, object]]:
    """Run the extension's probe (serverEnv.ts ``PROBE_SCRIPT``, read from its source) as it is run
    (``-c``, the provider as its argument), once per case ``(arguments, module hidden first)``, in
    one Python (the server imports once)."""
    probe = probe_script()
    driver = (
        "import sys\n"
        f"for args, absent in {[list(c) for c in cases]!r}:\n"
        "    sys.argv = ['-c', *args]\n"
        "    if absent:\n"
        "        sys.modules[absent] = None\n"
        f"    exec({probe!r}, {{}})\n"
        "    if absent:\n"
        "        del sys.modules[absent]\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", driver], capture_output=True, text=True, timeout=120, check=True
    )
    return [dict(json.loads(line)) for line in out.stdout.strip().splitlines()]


def test_the_extensions_probe_reports_the_missing_extra_of_the_provider_it_is_given() -> None:
    bedrock, vertex, other, anthropic, plain = run_probes(
        (["bedrock"], "boto3"),
        (["vertex"], "google.auth"),
        (["vertex"], "boto3"),
        (["anthropic"], "boto3"),
        ([], ""),
    )
    assert bedrock["missingExtra"] == "bedrock" and vertex["missingExtra"] == "vertex"
    assert other["missingExtra"] is None and anthropic["missingExtra"] is None
    assert plain.get("retrace") is not None and "missingExtra" not in plain and "error" not in plain
