"""The bucket, through ``obstore`` (S3 API): put/get/get_range/list/head/delete.

Contracts:

* Keys are relative to the workspace prefix; nothing here knows what an object means.
* Requests time out (connect 5 s, whole request 120 s) and transient failures are retried by
  obstore with exponential back-off (3 retries), so a dropped connection mid-upload is retried
  and, past that, surfaces as a :class:`RemoteError`.
* Every failure is ONE line naming the remote, the operation and the key; the underlying message
  is cut to its first line and never includes credentials (obstore's messages carry the URL
  and status, not the signature).
* Nothing read is trusted for size: ``get`` takes the limit of the object's kind
  (:mod:`retrace.sync.limits`), refuses a bigger object before reading its body and streams
  the body so one that grows past the limit is cut off, never buffered whole.
* ``get_range`` falls back to a whole GET (then a slice) on servers that ignore ``Range``;
  ``map_bounded`` runs calls with at most ``max_concurrency`` in flight; ``throttle`` keeps
  uploads under ``max_bytes_per_second`` when set.
"""

from __future__ import annotations

import builtins
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import obstore
from obstore.store import S3Store

from retrace.sync.config import Credentials, key_prefix, parse_url, resolve_credentials
from retrace.sync.errors import RemoteError
from retrace.sync.limits import PACK_BYTES
from retrace.sync.models import RemoteConfig

_CHUNK = 1 << 20
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: datetime


_RETRIES = re.compile(r"after (\d+) retries")


def reason(exc: BaseException) -> str:
    """The useful tail of an obstore error, one line: ``Generic S3 error: Error performing GET
    http://… in 331ms, after 3 retries, … - HTTP error: error sending request`` becomes
    ``HTTP error: error sending request (after 3 retries)``."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    head, sep, tail = first.rpartition(" - ")
    text = tail.strip() if sep and tail.strip() else first
    retries = _RETRIES.search(head)
    if retries and sep:
        text += f" (after {retries.group(1)} retries)"
    return text[:300]


class Bucket:
    """One remote's objects under its workspace prefix."""

    def __init__(self, config: RemoteConfig, env: Mapping[str, str]) -> None:
        self.name = config.name
        self.max_concurrency = max(1, config.max_concurrency)
        self.max_bytes_per_second = config.max_bytes_per_second
        bucket, _ = parse_url(config.url)
        self.prefix = key_prefix(config)
        self.endpoint = config.endpoint
        creds: Credentials = resolve_credentials(config, env)
        endpoint = config.endpoint
        settings: dict[str, Any] = {
            "access_key_id": creds.access_key_id,
            "secret_access_key": creds.secret_access_key,
            "region": creds.region,
        }
        if creds.session_token:
            settings["session_token"] = creds.session_token
        if endpoint:
            settings["endpoint"] = endpoint
            settings["virtual_hosted_style_request"] = False
        self._store = S3Store(
            bucket,
            prefix=self.prefix,
            client_options={
                "allow_http": bool(endpoint and endpoint.startswith("http://")),
                "connect_timeout": "5s",
                "timeout": "120s",
            },
            retry_config={
                "max_retries": 3,
                "retry_timeout": timedelta(seconds=60),
                "backoff": {
                    "init_backoff": timedelta(milliseconds=100),
                    "max_backoff": timedelta(seconds=5),
                    "base": 2,
                },
            },
            **settings,
        )
        self.ranges = True
        """False once the server ignored a Range request (whole objects are read then)."""
        self._rate_lock = threading.Lock()
        self._rate_start = time.monotonic()
        self._rate_bytes = 0
        self.requests = {"put": 0, "get": 0, "list": 0, "delete": 0, "head": 0}
        """Requests made by this client (benchmarks and tests count them)."""

    def _fail(self, op: str, key: str, exc: BaseException) -> RemoteError:
        at = f" at {self.endpoint}" if self.endpoint else ""
        return RemoteError(f"remote {self.name!r}{at}: {op} {self.prefix}/{key} failed: {reason(exc)}")

    def _count(self, op: str) -> None:
        self.requests[op] += 1

    def put(self, key: str, data: bytes) -> None:
        self.throttle(len(data))
        self._count("put")
        try:
            obstore.put(self._store, key, data)
        except Exception as exc:
            raise self._fail("PUT", key, exc) from None

    def get(self, key: str, *, limit: int, kind: str = "object") -> bytes:
        """The object's bytes, at most ``limit`` of them (a named limit of
        :mod:`retrace.sync.limits`): an object the server says is bigger is refused before its
        body is read, and one whose body runs past the limit is cut off while streaming — a
        :class:`RemoteError` naming the ``kind``, the key and both sizes."""
        self._count("get")
        try:
            result = obstore.get(self._store, key)
            size = int(result.meta["size"])
            if size > limit:
                raise self.too_big(kind, key, size, limit)
            parts: builtins.list[bytes] = []
            got = 0
            for chunk in result.stream(min_chunk_size=_CHUNK):
                got += len(chunk)
                if got > limit:
                    raise self.too_big(kind, key, got, limit)
                parts.append(bytes(chunk))
            return b"".join(parts)
        except RemoteError:
            raise
        except FileNotFoundError:
            raise RemoteError(f"remote {self.name!r}: {self.prefix}/{key} does not exist") from None
        except Exception as exc:
            raise self._fail("GET", key, exc) from None

    def too_big(self, kind: str, key: str, size: int, limit: int) -> RemoteError:
        return RemoteError(
            f"remote {self.name!r}: {kind} {self.prefix}/{key} is {size} bytes, more than the "
            f"{limit} a {kind} may hold: not read (a foreign or damaged object)"
        )

    def get_range(self, key: str, start: int, end: int, *, limit: int = PACK_BYTES) -> bytes:
        """Bytes ``[start, end)`` of an object (on a server that ignores ``Range``: of the whole
        object, read only when it is at most ``limit`` bytes)."""
        if self.ranges:
            self._count("get")
            try:
                return bytes(obstore.get_range(self._store, key, start=start, end=end))
            except FileNotFoundError:
                raise RemoteError(f"remote {self.name!r}: {self.prefix}/{key} does not exist") from None
            except Exception as exc:
                if "non-partial" not in str(exc):
                    raise self._fail("GET", key, exc) from None
                self.ranges = False  # this server ignores Range: whole objects from now on
        return self.get(key, limit=limit, kind="pack")[start:end]

    def list(self, prefix: str) -> list[ObjectInfo]:
        self._count("list")
        try:
            out: list[ObjectInfo] = []
            for chunk in obstore.list(self._store, prefix=prefix):
                out.extend(ObjectInfo(m["path"], m["size"], m["last_modified"]) for m in chunk)
        except Exception as exc:
            raise self._fail("LIST", prefix, exc) from None
        return out

    def head(self, key: str) -> ObjectInfo | None:
        self._count("head")
        try:
            m = obstore.head(self._store, key)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._fail("HEAD", key, exc) from None
        return ObjectInfo(m["path"], m["size"], m["last_modified"])

    def delete(self, key: str) -> None:
        self._count("delete")
        try:
            obstore.delete(self._store, key)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._fail("DELETE", key, exc) from None

    def throttle(self, nbytes: int) -> None:
        """Sleep as needed to keep uploads under ``max_bytes_per_second`` (no cap: no-op)."""
        cap = self.max_bytes_per_second
        if not cap:
            return
        with self._rate_lock:
            self._rate_bytes += nbytes
            due = self._rate_start + self._rate_bytes / cap
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def map_bounded(self, fn: Callable[[T], R], items: Iterable[T]) -> builtins.list[R]:
        """``fn`` over ``items`` with at most ``max_concurrency`` calls in flight; results in
        order; the first error is raised once every started call has finished."""
        work = list(items)
        if len(work) <= 1 or self.max_concurrency == 1:
            return [fn(i) for i in work]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            futures = [pool.submit(fn, i) for i in work]
            return [f.result() for f in futures]
