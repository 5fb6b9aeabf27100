"""Client-side encryption of remote objects: AES-256-GCM, so a bucket never sees code in clear.

Contracts:

* A sealed object is ``VERSION (1 byte) || nonce (12 random bytes) || ciphertext+tag``; every
  :meth:`Cipher.seal` draws a fresh nonce, so sealing the same bytes twice gives different
  objects (callers name packs by the hash of the *sealed* bytes, which leaks no content).
* The associated data is the key id and the caller's ``aad`` (the object key, or for a pack
  entry the blob id): a sealed object moved to another key, or sealed under another key, fails
  authentication in :meth:`Cipher.open` with a one-line :class:`RemoteError`.
* The key is 32 random bytes; its id is the first 16 hex digits of its sha256 (safe to store in
  ``remote.json``: it names the key, it does not reveal it). The key itself lives only in
  ``RETRACE_REMOTE_KEY`` (base64; how the extension passes it from SecretStorage) or in the key
  file ``<user config dir>/retrace/keys/<key id>.key`` (mode 0600, created by
  ``remote add --encrypt``) — never in the workspace, the store or settings, never logged.
  ``RETRACE_KEY_DIR`` overrides the key folder (tests, portable set-ups).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import platformdirs
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from retrace.sync.errors import RemoteError

KEY_ENV = "RETRACE_REMOTE_KEY"
KEY_DIR_ENV = "RETRACE_KEY_DIR"
KEY_BYTES = 32
NONCE_BYTES = 12
VERSION = b"\x01"
OVERHEAD = len(VERSION) + NONCE_BYTES + 16
"""Bytes a sealed object has beyond its plaintext (version, nonce, GCM tag)."""


class EncryptedRemote(Protocol):
    """What :func:`cipher_for` reads of a remote's configuration."""

    @property
    def name(self) -> str: ...
    @property
    def encrypt(self) -> bool: ...
    @property
    def key_id(self) -> str | None: ...


def key_id_of(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


class Cipher:
    """AES-256-GCM under one key; ``key_id`` is bound into every object's associated data."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise RemoteError(f"an encryption key must be {KEY_BYTES} bytes, got {len(key)}")
        self._aead = AESGCM(key)
        self.key_id = key_id_of(key)
        self._prefix = self.key_id.encode("ascii") + b"\x00"

    def seal(self, data: bytes, aad: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return VERSION + nonce + self._aead.encrypt(nonce, data, self._prefix + aad)

    def open(self, data: bytes, aad: bytes, *, name: str | None = None) -> bytes:
        """The plaintext of a sealed object; ``name`` (default: ``aad``) names it in errors."""
        label = name if name is not None else aad.decode("utf-8", "replace")
        if len(data) < OVERHEAD or data[:1] != VERSION:
            raise RemoteError(f"remote object {label} is not an encrypted object of this version")
        nonce = data[1 : 1 + NONCE_BYTES]
        try:
            return self._aead.decrypt(nonce, data[1 + NONCE_BYTES :], self._prefix + aad)
        except InvalidTag:
            raise RemoteError(f"remote object {label} failed authentication: wrong key or tampered") from None


def keys_dir(env: Mapping[str, str]) -> Path:
    override = env.get(KEY_DIR_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir("retrace", appauthor=False)) / "keys"


def key_path(key_id: str, env: Mapping[str, str]) -> Path:
    return keys_dir(env) / f"{key_id}.key"


def encode_key(key: bytes) -> str:
    return base64.b64encode(key).decode("ascii")


def decode_key(text: str, source: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise RemoteError(f"{source} is not a base64-encoded encryption key") from None
    if len(key) != KEY_BYTES:
        raise RemoteError(f"{source} holds {len(key)} bytes, an encryption key is {KEY_BYTES}")
    return key


def generate_key(env: Mapping[str, str]) -> tuple[str, Path | None]:
    """A new key for ``remote add --encrypt``: (key id, key file written or None).

    With ``RETRACE_REMOTE_KEY`` set, that key is used (the extension keeps it in SecretStorage)
    and no file is written; otherwise 32 random bytes go to a new 0600 key file.
    """
    given = env.get(KEY_ENV)
    if given:
        return key_id_of(decode_key(given, KEY_ENV)), None
    key = secrets.token_bytes(KEY_BYTES)
    key_id = key_id_of(key)
    path = key_path(key_id, env)
    write_key_file(path, key)
    return key_id, path


def write_key_file(path: Path, key: bytes) -> None:
    """Create ``path`` holding the base64 key, readable by its owner only (never overwrites)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        path.parent.chmod(0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise RemoteError(f"key file {path} already exists") from None
    except OSError as exc:
        raise RemoteError(f"cannot write key file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(encode_key(key) + "\n")
        out.flush()
        os.fsync(out.fileno())


def load_key(remote: str, key_id: str, env: Mapping[str, str]) -> bytes:
    """The key of ``key_id``: from ``RETRACE_REMOTE_KEY`` if set, else from its key file."""
    given = env.get(KEY_ENV)
    if given:
        key = decode_key(given, KEY_ENV)
        if key_id_of(key) != key_id:
            raise RemoteError(
                f"{KEY_ENV} holds key {key_id_of(key)}, but remote {remote!r} is encrypted with key {key_id}"
            )
        return key
    path = key_path(key_id, env)
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise RemoteError(
            f"remote {remote!r} is encrypted with key {key_id}, which is neither in {KEY_ENV} nor in {path}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RemoteError(f"cannot read key file {path}: {exc}") from None
    key = decode_key(text, f"key file {path}")
    if key_id_of(key) != key_id:
        raise RemoteError(f"key file {path} holds key {key_id_of(key)}, not {key_id}")
    return key


def cipher_for(config: EncryptedRemote, env: Mapping[str, str]) -> Cipher | None:
    """The cipher of an encrypted remote (None when the remote is not encrypted)."""
    if not config.encrypt:
        return None
    if not config.key_id:
        raise RemoteError(f"remote {config.name!r} is encrypted but names no key id")
    return Cipher(load_key(config.name, config.key_id, env))
