"""The fault proxy itself, against the real S3 server: it forwards faithfully (signatures still
verify) and injects exactly the faults it is told to; the client retries 500s and drops."""

from __future__ import annotations

import pytest
from tests.remote.fault_proxy import FaultProxy
from tests.remote.s3server import SECRET_KEY, S3Server

from retrace.sync.errors import RemoteError
from retrace.sync.models import RemoteConfig
from retrace.sync.objects import Bucket


def bucket_via(proxy: FaultProxy, s3: S3Server) -> Bucket:
    config = RemoteConfig(name="origin", url=s3.url(), endpoint=proxy.endpoint, workspace_name="ws")
    return Bucket(config, s3.env())


def test_forwards_every_operation(proxy: FaultProxy, s3: S3Server) -> None:
    b = bucket_via(proxy, s3)
    b.put("a/one", b"hello")
    assert b.get("a/one", limit=1 << 20) == b"hello"
    assert b.get_range("a/one", 1, 3) == b"el"
    info = b.head("a/one")
    assert info is not None and info.size == 5
    assert [o.key for o in b.list("a/")] == ["a/one"]
    b.delete("a/one")
    assert b.head("a/one") is None
    assert s3.objects() == {}
    assert all(e.outcome.startswith("forwarded") for e in proxy.log)


def test_injected_500s_are_retried(proxy: FaultProxy, s3: S3Server) -> None:
    b = bucket_via(proxy, s3)
    proxy.fail(2, method="PUT")
    b.put("k", b"data")
    assert proxy.count("PUT", outcome="fail 500") == 2
    assert proxy.count("PUT", outcome="forwarded 200") == 1
    assert s3.objects() == {"team/ws/k": 4}


def test_lost_answer_after_the_server_wrote_is_retried_without_duplicates(
    proxy: FaultProxy, s3: S3Server
) -> None:
    b = bucket_via(proxy, s3)
    proxy.drop(1, after_forward=True, method="PUT")
    b.put("k", b"data")
    assert proxy.count("PUT", outcome="drop-after") == 1
    assert s3.objects() == {"team/ws/k": 4}


def test_remote_down_is_one_clear_line(proxy: FaultProxy, s3: S3Server) -> None:
    b = bucket_via(proxy, s3)
    proxy.down()
    with pytest.raises(RemoteError) as info:
        b.put("k", b"data")
    message = str(info.value)
    assert "\n" not in message and "origin" in message and "PUT" in message
    assert SECRET_KEY not in message
    proxy.clear()
    b.put("k", b"data")
    assert s3.objects() == {"team/ws/k": 4}


def test_delay_is_applied_and_logged(proxy: FaultProxy, s3: S3Server) -> None:
    b = bucket_via(proxy, s3)
    proxy.delay(0.2, method="GET")
    b.put("k", b"x")
    assert b.get("k", limit=16) == b"x"
    delayed = [e for e in proxy.log if e.method == "GET"]
    assert delayed and delayed[-1].seconds >= 0.2
