"""Remote configuration: ``<store>/remote.json``, URL validation, and the credential chain.

Contracts:

* ``remote.json`` holds :class:`RemoteConfig` entries only: never a credential, never a key.
  It is written atomically (temporary file + ``os.replace``).
* A remote URL is ``s3://bucket[/prefix]``; the key prefix of a workspace is
  ``<prefix>/<workspace name>`` (:func:`key_prefix`). Invalid input is refused with one line.
* Credentials come from the standard chain, read at call time and kept in memory only:
  ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, else the
  ``~/.aws/credentials`` profile ``AWS_PROFILE`` (default ``default``). Region:
  ``AWS_REGION``/``AWS_DEFAULT_REGION``, else the remote's, else ``us-east-1``.
"""

from __future__ import annotations

import configparser
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from retrace.camel import dump
from retrace.engine.store.layout import StoreLayout
from retrace.sync.errors import RemoteError
from retrace.sync.files import write_json
from retrace.sync.models import RemoteConfig

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def parse_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "a/b")`` (prefix may be empty)."""
    if not url.startswith("s3://"):
        raise RemoteError(f"remote URL must look like s3://bucket/prefix, got {url!r}")
    bucket, _, prefix = url[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    if not _BUCKET.match(bucket):
        raise RemoteError(f"invalid bucket name {bucket!r} in {url!r} (3-63 of a-z, 0-9, '.', '-')")
    for part in prefix.split("/") if prefix else []:
        if not _SEGMENT.match(part) or part in {".", ".."}:
            raise RemoteError(f"invalid prefix component {part!r} in {url!r} (letters, digits, '._-')")
    return bucket, prefix


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise RemoteError(f"invalid remote name {name!r} (letters, digits, '-', '_'; at most 63)")
    return name


def check_workspace_name(name: str) -> str:
    """One key component, or several joined by ``/`` (a folder of a multi-root workspace:
    ``<workspace name>/<folder name>``, :mod:`retrace.sync.identity`)."""
    for part in name.split("/"):
        if not _SEGMENT.match(part) or part in {".", ".."}:
            raise RemoteError(f"invalid workspace name {name!r} (letters, digits, '._-', '/' between them)")
    return name


def default_workspace_name(workspace: Path) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", workspace.resolve().name).strip("-.")
    return slug or "workspace"


def check_endpoint(endpoint: str | None) -> str | None:
    if endpoint is None:
        return None
    if not re.match(r"^https?://[^\s/]+(/\S*)?$", endpoint):
        raise RemoteError(f"endpoint must be an http(s) URL, got {endpoint!r}")
    return endpoint.rstrip("/")


def key_prefix(config: RemoteConfig) -> str:
    """The per-workspace key prefix inside the bucket (no leading or trailing slash)."""
    _bucket, prefix = parse_url(config.url)
    return f"{prefix}/{config.workspace_name}" if prefix else config.workspace_name


def load_remotes(layout: StoreLayout) -> list[RemoteConfig]:
    try:
        raw = json.loads(layout.remote_config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise RemoteError(f"cannot read {layout.remote_config}: {exc}") from None
    try:
        return [RemoteConfig.model_validate(r) for r in raw.get("remotes", [])]
    except (ValidationError, AttributeError) as exc:
        first = str(exc).splitlines()[0]
        raise RemoteError(f"{layout.remote_config} is not a valid remote configuration: {first}") from None


def save_remotes(layout: StoreLayout, remotes: list[RemoteConfig]) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    write_json(layout.remote_config, {"remotes": [dump(r) for r in remotes]})


def pick(remotes: list[RemoteConfig], name: str | None) -> RemoteConfig:
    """The named remote, or the only one when ``name`` is None."""
    if name is None:
        if not remotes:
            raise RemoteError("no remote configured: retrace remote add NAME s3://bucket/prefix")
        if len(remotes) > 1:
            names = ", ".join(r.name for r in remotes)
            raise RemoteError(f"several remotes ({names}): name one")
        return remotes[0]
    for r in remotes:
        if r.name == name:
            return r
    raise RemoteError(f"no remote named {name!r}")


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str | None
    region: str

    def __repr__(self) -> str:  # never print a secret by accident
        return f"Credentials(access_key_id={self.access_key_id[:4]}…, region={self.region!r})"


def resolve_credentials(config: RemoteConfig, env: Mapping[str, str]) -> Credentials:
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or config.region or "us-east-1"
    key = env.get("AWS_ACCESS_KEY_ID")
    secret = env.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        return Credentials(key, secret, env.get("AWS_SESSION_TOKEN") or None, region)
    profile = env.get("AWS_PROFILE") or "default"
    home = Path(env.get("HOME") or Path.home())
    path = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials")
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error):
        parser = configparser.ConfigParser()
    if parser.has_section(profile):
        sec = parser[profile]
        key, secret = sec.get("aws_access_key_id"), sec.get("aws_secret_access_key")
        if key and secret:
            return Credentials(key, secret, sec.get("aws_session_token") or None, region)
    raise RemoteError(
        f"no credentials for remote {config.name!r}: set AWS_ACCESS_KEY_ID and "
        f"AWS_SECRET_ACCESS_KEY, or a [{profile}] profile in {path}"
    )
