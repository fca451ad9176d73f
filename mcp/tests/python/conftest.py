"""Fixtures the gateway's and idem's own server's tests share: a store per
test (a SQLite file, or a PostgreSQL schema of its own when
IDEM_TEST_POSTGRES_URL is set, else those tests are skipped)."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from test_gateway import Env


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# The committed JSON Schema of `_meta.idem` (generated from idem-wire's
# struct, checked by `cargo test -p idem-wire`).
META_SCHEMA = Path(__file__).resolve().parents[3] / "clients" / "conformance" / "mcp-meta.schema.json"


def check_idem_meta(meta: Any) -> None:
    """Fails unless `meta` (a `_meta.idem`) is what the schema says."""
    import json

    import jsonschema

    jsonschema.validate(meta, json.loads(META_SCHEMA.read_text()))


@pytest.fixture(autouse=True)
def every_idem_meta_matches_the_schema(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every answer a test reads through the SDK: its `_meta.idem`, when it
    has one, is checked against the committed schema (the answers of
    unguarded tools and of idem's own server carry none)."""
    from mcp import ClientSession

    original = ClientSession.call_tool
    seen: list[Any] = []

    async def call_tool(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await original(self, *args, **kwargs)
        meta = (getattr(result, "meta", None) or {}).get("idem")
        if meta is not None:
            check_idem_meta(meta)
            seen.append(meta)
        return result

    monkeypatch.setattr(ClientSession, "call_tool", call_tool)
    yield seen


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        e = Env(tmp_path, None)
        yield e
        e.close()
        return
    url = os.environ.get("IDEM_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("IDEM_TEST_POSTGRES_URL is not set")
    schema = "mcp_" + uuid.uuid4().hex[:12]
    subprocess.run(["psql", url, "-qc", f"create schema {schema}"], check=True)
    sep = "&" if "?" in url else "?"
    e = Env(tmp_path, f"{url}{sep}options=-c%20search_path%3D{schema}")
    try:
        yield e
    finally:
        e.close()
        subprocess.run(["psql", url, "-qc", f"drop schema {schema} cascade"], check=True)




class Served:
    """`idem serve` on this test's store, with the gateway `pay` mounted."""

    def __init__(self, env: Env, extra: list[str], top: str = "pass_through = true", delay_ms: int = 0) -> None:
        import re
        import time

        self.log = env.tmp / "serve.log"
        self.tenant = "http" + uuid.uuid4().hex[:8]
        self.token = env.idem("tenant", "create", self.tenant).stdout.strip()
        # The mount serves this test's tenant (a mount names its tenants).
        guard = env.guard_file(top=f'tenants = ["{self.tenant}"]\n{top}', delay_ms=delay_ms)
        extra = ["--mcp-gateway", f"pay={guard}", *extra]
        cmd = [os.environ.get("IDEM_BIN", ""), "serve", "--addr", "127.0.0.1:0", *env.db_args(), *extra]
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     env={**os.environ, **env.env()})
        give_up = time.monotonic() + 60
        while time.monotonic() < give_up:
            found = re.search(r"listening on (http://[0-9.:]+)", self.log.read_text())
            if found:
                self.url = found.group(1)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(self.log.read_text())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def served(env: Env) -> Any:
    from test_gateway import IDEM

    os.environ.setdefault("IDEM_BIN", IDEM)
    s = Served(env, [])
    yield s
    s.stop()
