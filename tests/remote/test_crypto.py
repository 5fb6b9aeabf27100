"""Client-side encryption: round trip, tamper detection, wrong key, AAD binding, key files."""

from __future__ import annotations

import base64
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrace.sync.crypto import (
    KEY_DIR_ENV,
    KEY_ENV,
    OVERHEAD,
    Cipher,
    cipher_for,
    generate_key,
    key_id_of,
    key_path,
    load_key,
)
from retrace.sync.errors import RemoteError

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


@dataclass
class Remote:
    name: str = "origin"
    encrypt: bool = True
    key_id: str | None = None


def test_round_trip_and_fresh_nonce() -> None:
    cipher = Cipher(KEY)
    data = b"def secret():\n    return 42\n" * 100
    one = cipher.seal(data, b"packs/abc.idx")
    two = cipher.seal(data, b"packs/abc.idx")
    assert one != two, "a fresh nonce per object"
    assert len(one) == len(data) + OVERHEAD
    assert data not in one
    assert cipher.open(one, b"packs/abc.idx") == data
    assert cipher.open(two, b"packs/abc.idx") == data
    assert cipher.open(cipher.seal(b"", b"k"), b"k") == b""


@pytest.mark.parametrize("position", [0, 1, 5, 13, 20, -1])
def test_any_flipped_byte_fails_authentication(position: int) -> None:
    cipher = Cipher(KEY)
    sealed = bytearray(cipher.seal(b"hello world, this is code", b"sessions/s/x.seg"))
    sealed[position] ^= 0x01
    with pytest.raises(RemoteError, match=r"sessions/s/x\.seg|not an encrypted object"):
        cipher.open(bytes(sealed), b"sessions/s/x.seg")


def test_truncated_object_is_refused() -> None:
    cipher = Cipher(KEY)
    sealed = cipher.seal(b"abc", b"k")
    with pytest.raises(RemoteError, match="not an encrypted object"):
        cipher.open(sealed[:10], b"k")
    with pytest.raises(RemoteError, match="failed authentication"):
        cipher.open(sealed[:-1], b"k")


def test_wrong_key_fails_with_one_line() -> None:
    sealed = Cipher(KEY).seal(b"payload", b"packs/p.idx")
    with pytest.raises(RemoteError) as info:
        Cipher(OTHER).open(sealed, b"packs/p.idx")
    message = str(info.value)
    assert message == "remote object packs/p.idx failed authentication: wrong key or tampered"
    assert "\n" not in message


def test_aad_binds_the_object_key() -> None:
    """A sealed object moved to another key (object name) fails."""
    cipher = Cipher(KEY)
    sealed = cipher.seal(b"payload", b"P/sessions/a/s1/g0000/00000000-0-7-1.seg")
    for moved in (b"P/sessions/a/s1/g0000/00000001-7-14-2.seg", b""):
        with pytest.raises(RemoteError, match="failed authentication"):
            cipher.open(sealed, moved)


def test_key_id_is_in_the_associated_data() -> None:
    """The AAD is key id + object key: the same key without its id does not authenticate."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    sealed = Cipher(KEY).seal(b"payload", b"k")
    nonce, body = sealed[1:13], sealed[13:]
    with pytest.raises(InvalidTag):
        AESGCM(KEY).decrypt(nonce, body, b"k")
    assert AESGCM(KEY).decrypt(nonce, body, key_id_of(KEY).encode() + b"\x00k") == b"payload"


def test_wrong_key_length_is_refused() -> None:
    with pytest.raises(RemoteError, match="32 bytes"):
        Cipher(b"short")


def test_generated_key_file_is_private_and_loads(tmp_path: Path) -> None:
    env = {KEY_DIR_ENV: str(tmp_path / "keys")}
    key_id, path = generate_key(env)
    assert path == key_path(key_id, env)
    assert path is not None and path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = load_key("origin", key_id, env)
    assert key_id_of(key) == key_id and len(key) == 32
    cipher = cipher_for(Remote(key_id=key_id), env)
    assert cipher is not None and cipher.key_id == key_id
    assert cipher.open(Cipher(key).seal(b"x", b"k"), b"k") == b"x"


def test_key_from_environment_needs_no_file(tmp_path: Path) -> None:
    env = {KEY_DIR_ENV: str(tmp_path / "keys"), KEY_ENV: base64.b64encode(KEY).decode()}
    key_id, path = generate_key(env)
    assert path is None and key_id == key_id_of(KEY)
    assert not (tmp_path / "keys").exists()
    assert load_key("origin", key_id, env) == KEY


def test_environment_key_of_another_id_is_refused(tmp_path: Path) -> None:
    env = {KEY_DIR_ENV: str(tmp_path), KEY_ENV: base64.b64encode(OTHER).decode()}
    with pytest.raises(RemoteError, match=f"encrypted with key {key_id_of(KEY)}"):
        load_key("origin", key_id_of(KEY), env)


def test_missing_key_says_where_it_was_looked_for(tmp_path: Path) -> None:
    env = {KEY_DIR_ENV: str(tmp_path / "keys")}
    key_id = key_id_of(KEY)
    with pytest.raises(RemoteError) as info:
        cipher_for(Remote(key_id=key_id), env)
    message = str(info.value)
    assert KEY_ENV in message and str(key_path(key_id, env)) in message and "\n" not in message


def test_bad_key_text_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match="not a base64"):
        load_key("origin", "0" * 16, {KEY_ENV: "%%%"})
    with pytest.raises(RemoteError, match="holds 3 bytes"):
        load_key("origin", "0" * 16, {KEY_ENV: base64.b64encode(b"abc").decode()})


def test_unencrypted_remote_has_no_cipher() -> None:
    assert cipher_for(Remote(encrypt=False), {}) is None


def test_default_key_dir_is_the_user_config_dir_not_the_store(tmp_path: Path) -> None:
    from retrace.sync.crypto import keys_dir

    folder = keys_dir({})
    assert folder.name == "keys" and folder.parent.name == "retrace"
    assert str(folder).startswith(os.path.expanduser("~")) or os.name == "nt"
