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


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield Env(tmp_path, None)
        return
    url = os.environ.get("IDEM_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("IDEM_TEST_POSTGRES_URL is not set")
    schema = "mcp_" + uuid.uuid4().hex[:12]
    subprocess.run(["psql", url, "-qc", f"create schema {schema}"], check=True)
    sep = "&" if "?" in url else "?"
    try:
        yield Env(tmp_path, f"{url}{sep}options=-c%20search_path%3D{schema}")
    finally:
        subprocess.run(["psql", url, "-qc", f"drop schema {schema} cascade"], check=True)


