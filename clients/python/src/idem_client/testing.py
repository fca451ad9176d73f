"""A real idem server for tests: ``with idem_client.testing.serve() as srv``.

It runs the ``idem`` binary (``IDEM_BIN``, else ``idem`` on ``PATH``, else
``target/release/idem`` under the working directory) on a temporary SQLite
database (or ``database_url=``), with the demo payment provider mounted, and
creates a tenant whose token it hands over. Nothing is mocked: what passes
here passes against production's server.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Generator

import httpx

_LISTENING = re.compile(r"listening on (http://[0-9.:\[\]a-z]+)")


@dataclass(frozen=True)
class Server:
    """A running test server: ``url``, a tenant's ``token``, its ``tenant``
    name, and the ``data_dir`` the server keeps its database and secret in."""

    url: str
    token: str
    tenant: str
    data_dir: Path
    database_url: str | None
    binary: str

    def new_tenant(self, name: str) -> str:
        """Creates another tenant on this server's store and returns its token."""
        return _create_tenant(self.binary, self.data_dir, self.database_url, name)


def find_binary(binary: str | None = None) -> str:
    """The ``idem`` binary to run."""
    for candidate in (binary, os.environ.get("IDEM_BIN"), shutil.which("idem"), "target/release/idem"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("no idem binary: set IDEM_BIN, put idem on PATH, or build target/release/idem")


def _env(database_url: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("RUST_LOG", "info")
    if database_url and database_url.startswith("postgres") and "IDEMPOTENCY_HMAC_KEY" not in env:
        # PostgreSQL has no data directory to keep a generated secret in.
        env["IDEMPOTENCY_HMAC_KEY"] = "idem-client-tests-only-secret-0123456789"
    return env


def _create_tenant(binary: str, data_dir: Path, database_url: str | None, name: str) -> str:
    cmd = [binary, "tenant", "create", name, "--data-dir", str(data_dir)]
    if database_url:
        cmd += ["--database-url", database_url]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(database_url), timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"idem tenant create {name} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@contextlib.contextmanager
def serve(
    *,
    database_url: str | None = None,
    tenant: str | None = None,
    binary: str | None = None,
    demo: bool = True,
    extra_args: tuple[str, ...] = (),
    startup_timeout: float = 30.0,
) -> Generator[Server, None, None]:
    """Starts ``idem serve`` on a free loopback port and stops it on exit."""
    exe = find_binary(binary)
    with tempfile.TemporaryDirectory(prefix="idem-test-") as tmp:
        data_dir = Path(tmp)
        os.chmod(data_dir, 0o700)
        name = tenant or f"t{os.getpid()}x{time.monotonic_ns() % 10**9}"
        token = _create_tenant(exe, data_dir, database_url, name)
        cmd = [exe, "serve", "--addr", "127.0.0.1:0", "--data-dir", str(data_dir)]
        if database_url:
            cmd += ["--database-url", database_url]
        if demo:
            cmd.append("--demo")
        cmd += list(extra_args)
        log_path = data_dir / "server.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_env(database_url))
        try:
            url = _wait_listening(proc, log_path, startup_timeout)
            yield Server(url, token, name, data_dir, database_url, exe)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_listening(proc: subprocess.Popen[bytes], log_path: Path, timeout: float) -> str:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        text = log_path.read_text(errors="replace")
        found = _LISTENING.search(text)
        if found:
            url = found.group(1)
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
        if proc.poll() is not None:
            raise RuntimeError(f"idem serve exited ({proc.returncode}):\n{text[-4000:]}")
        time.sleep(0.05)
    raise TimeoutError(f"idem serve did not answer within {timeout} s:\n{log_path.read_text(errors='replace')[-4000:]}")
