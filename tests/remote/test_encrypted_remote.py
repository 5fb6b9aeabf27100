"""An encrypted remote, against a real S3 server: the bucket holds no plaintext of a known file
(neither its text nor its sha256, the blob id), the key never leaves the key file, a second
machine with the key opens and restores byte-exact, and one without it fails with one line."""

from __future__ import annotations

import base64
import hashlib
import stat
import uuid
from pathlib import Path

import pytest
from tests.oracles import entry_hashes
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.engine import Engine
from retrace.sync.crypto import KEY_DIR_ENV, KEY_ENV, key_path
from retrace.sync.errors import RemoteError


def all_object_bytes(s3: S3Server) -> dict[str, bytes]:
    root = s3.data / s3.bucket
    return {k: (root / k).read_bytes() for k in s3.objects()}


def test_encrypted_bucket_holds_no_plaintext_and_needs_the_key(tmp_path: Path, s3: S3Server) -> None:
    secret_line = f"API_TOKEN = 'retrace-secret-{uuid.uuid4().hex}'\n"
    secret_file = (secret_line * 50).encode()  # compressible: zstd would keep it readable-ish
    digest = hashlib.sha256(secret_file).hexdigest()
    a = Machine.make(tmp_path, s3, "a")
    a_env = {KEY_DIR_ENV: str(tmp_path / "a-keys")}
    (a.ws / "config.py").write_bytes(secret_file)
    (a.ws / "src").mkdir()
    (a.ws / "src" / "app.py").write_text("print('hello')\n")
    with a.engine("secret-session") as eng:
        eng.checkpoint("with secret")
        (a.ws / "src" / "app.py").write_text("print('hello again')\n")
        last = eng.checkpoint("second").id
    expected = entry_hashes(a.ws, include_git=True)
    svc_a = a.add_remote(encrypt=True, **a_env)
    config = svc_a.remotes()[0]
    assert config.encrypt and config.key_id
    key_file = key_path(config.key_id, a_env)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key_text = key_file.read_text().strip()
    assert key_text not in (a.store / "remote.json").read_text()
    svc_a.push()

    objects = all_object_bytes(s3)
    assert any(k.endswith(".pack") for k in objects) and any(k.endswith(".seg") for k in objects)
    needles = {
        "text": secret_line.strip().encode(),
        "distinctive part": secret_line.split("'")[1].encode(),
        "sha256 hex": digest.encode(),
        "sha256 raw": bytes.fromhex(digest),
        "session journal text": b'"checkpoint"',
        "file name": b"config.py",
        "key": key_text.encode(),
        "raw key": base64.b64decode(key_text),
    }
    for key, data in objects.items():
        for what, needle in needles.items():
            assert needle not in data, f"{what} found in {key}"
        assert digest not in key, f"blob id in the object key {key}"

    # Machine B with the key (as the extension passes it from SecretStorage): opens and restores.
    b = Machine.make(tmp_path, s3, "b")
    b_env = {KEY_DIR_ENV: str(tmp_path / "b-keys"), KEY_ENV: key_text}
    svc_b = b.add_remote(encrypt=True, **b_env)
    assert svc_b.remotes()[0].key_id == config.key_id
    assert not (tmp_path / "b-keys").exists(), "a key from the environment is never written"
    svc_b.open("secret-session")
    with Engine.open(b.ws, b.store, blob_source=svc_b.blob_source()) as eng:
        eng.restore(last, force=True)
    assert entry_hashes(b.ws, include_git=True) == expected

    # A machine configured for that key whose key is missing (SecretStorage emptied, key file
    # not copied): one line naming where the key is looked for, nothing imported.
    d = Machine.make(tmp_path, s3, "d")
    d.add_remote(encrypt=True, **{KEY_DIR_ENV: str(tmp_path / "d-keys"), KEY_ENV: key_text})
    without = d.service(**{KEY_DIR_ENV: str(tmp_path / "d-keys")})
    with pytest.raises(RemoteError) as info:
        without.open("secret-session")
    message = str(info.value)
    assert "\n" not in message and KEY_ENV in message and str(tmp_path / "d-keys") in message
    assert key_text not in message
    assert not (d.store / "sessions" / "secret-session" / "journal.jsonl").exists()

    # Machine C with a different key of its own: authentication fails, one line, nothing imported.
    c = Machine.make(tmp_path, s3, "c")
    svc_c = c.add_remote(encrypt=True, **{KEY_DIR_ENV: str(tmp_path / "c-keys")})
    assert svc_c.remotes()[0].key_id != config.key_id
    with pytest.raises(RemoteError, match="failed authentication: wrong key or tampered") as info_c:
        svc_c.open("secret-session")
    assert "\n" not in str(info_c.value)
    assert not (c.store / "sessions" / "secret-session" / "journal.jsonl").exists()


def test_tampered_object_is_refused(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    env = {KEY_DIR_ENV: str(tmp_path / "keys")}
    (a.ws / "f.txt").write_text("hello\n")
    with a.engine("s") as eng:
        eng.checkpoint("one")
    svc = a.add_remote(encrypt=True, **env)
    svc.push()
    root = s3.data / s3.bucket
    seg = next(root / k for k in s3.objects() if k.endswith(".seg"))
    data = bytearray(seg.read_bytes())
    data[-5] ^= 0x40
    seg.write_bytes(bytes(data))
    b = Machine.make(tmp_path, s3, "b")
    key_text = next((tmp_path / "keys").glob("*.key")).read_text().strip()
    svc_b = b.add_remote(encrypt=True, **{KEY_DIR_ENV: str(tmp_path / "b"), KEY_ENV: key_text})
    with pytest.raises(RemoteError, match="failed authentication"):
        svc_b.open("s")
