"""Helpers of the remote tests: a "machine" = a workspace folder + a store folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.remote.s3server import S3Server

from retrace.engine import Engine
from retrace.sync import RemoteService


@dataclass
class Machine:
    ws: Path
    store: Path
    s3: S3Server

    @classmethod
    def make(cls, root: Path, s3: S3Server, name: str) -> Machine:
        ws = root / name / "ws"
        ws.mkdir(parents=True)
        return cls(ws, root / name / "store", s3)

    def service(self, **env: str) -> RemoteService:
        return RemoteService(self.store, self.ws, env={**self.s3.env(), "HOME": str(self.ws.parent), **env})

    def add_remote(self, *, encrypt: bool = False, **env: str) -> RemoteService:
        svc = self.service(**env)
        svc.add("origin", self.s3.url(), endpoint=self.s3.endpoint, workspace_name="proj", encrypt=encrypt)
        return svc

    def engine(self, session_id: str | None = None, *, remote: bool = False) -> Engine:
        source = self.service().blob_source() if remote else None
        return Engine.open(self.ws, self.store, session_id=session_id, blob_source=source)
