"""Fixtures: a real ``idem serve`` per backend (SQLite always, PostgreSQL
when ``IDEM_TEST_POSTGRES_URL`` is set, else those tests are skipped), a
fresh tenant per test, and the demo payment provider as the PSP whose
ledger (GET /v1/demo/ledger) is the oracle."""

from __future__ import annotations

import os
import subprocess
import uuid
from typing import Any, Iterator

import httpx
import pytest

import idem_client
from idem_client.testing import Server, serve

from support import pix, psp_charge

__all__ = ["pix"]

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session", params=BACKENDS)
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    if request.param == "postgres":
        url = os.environ.get("IDEM_TEST_POSTGRES_URL")
        if not url:
            pytest.skip("IDEM_TEST_POSTGRES_URL is not set")
        # A schema of its own: the database is shared with other suites,
        # each with its own HMAC secret.
        schema = "pyclient_" + uuid.uuid4().hex[:12]
        subprocess.run(["psql", url, "-qc", f"create schema {schema}"], check=True)
        sep = "&" if "?" in url else "?"
        try:
            with serve(database_url=f"{url}{sep}options=-c%20search_path%3D{schema}") as srv:
                yield srv
        finally:
            subprocess.run(["psql", url, "-qc", f"drop schema {schema} cascade"], check=True)
    else:
        with serve() as srv:
            yield srv


class Tenant:
    """One test's tenant on the shared server, and its view of the PSP."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.name = "py" + uuid.uuid4().hex[:12]
        self.token = srv.new_tenant(self.name)
        self.url = srv.url

    def client(self, **kw: Any) -> idem_client.Client:
        return idem_client.Client(kw.pop("base_url", self.url), self.token, **kw)

    def async_client(self, **kw: Any) -> idem_client.AsyncClient:
        return idem_client.AsyncClient(kw.pop("base_url", self.url), self.token, **kw)

    def charge(self, intent: idem_client.Intent) -> dict[str, Any]:
        """The PSP call a worker makes: the frozen amount, the frozen key."""
        return psp_charge(self.url, self.token, intent.payload, intent.key)

    def charges(self) -> list[dict[str, Any]]:
        r = httpx.get(self.url + "/v1/demo/ledger", headers={"authorization": f"Bearer {self.token}"})
        r.raise_for_status()
        out: list[dict[str, Any]] = r.json()["charges"]
        return out


@pytest.fixture
def tenant(server: Server) -> Tenant:
    return Tenant(server)


