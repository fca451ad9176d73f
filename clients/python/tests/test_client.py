"""The Python client against a real idem server, on SQLite and PostgreSQL.
The demo provider's ledger (GET /v1/demo/ledger) is the oracle: what it
recorded is what a customer was charged."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

import idem_client
from conftest import Tenant
from faultproxy import FaultProxy
from support import pix

HERE = os.path.dirname(os.path.abspath(__file__))


def ref(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


# -- replay, divergence, the frozen payload -----------------------------------


def test_replay_runs_once_and_returns_the_stored_response(tenant: Tenant) -> None:
    client = tenant.client()
    runs: list[str] = []

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        runs.append(intent.key)
        return tenant.charge(intent)

    r = ref("replay")
    first = charge(pix(r))
    second = charge(pix(r))
    assert (first.replayed, second.replayed) == (False, True)
    assert second.response == first.response
    assert first.key == second.key and len(first.key) == 64
    assert first.attempt == 1 and second.attempt == 1
    assert len(runs) == 1
    assert len(tenant.charges()) == 1


def test_the_worker_charges_the_frozen_amount_as_sent_never_the_cents(tenant: Tenant) -> None:
    client = tenant.client()

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    r = ref("amount")
    out = charge(pix(r, valor="180.00"))
    assert out.intent.payload["valor"] == "180.00"
    assert out.intent.normalized["valor"] == "18000"
    for _ in range(3):
        again = charge(pix(r, valor="180.00"))
        assert again.intent.payload["valor"] == "180.00"
    charges = tenant.charges()
    assert [c["amount_cents"] for c in charges] == [18000], "R$ 180,00, never 18000 reais"


@pytest.mark.parametrize("valor", [Decimal("19.99"), 19.99])
def test_a_numeric_amount_comes_back_as_a_decimal_and_charges_its_exact_cents(tenant: Tenant, valor: Any) -> None:
    # 19.99 as a float is 19.98999…: int(19.99 * 100) is 1998 while the key
    # covers 1999. The client reads JSON numbers as Decimal and writes a
    # Decimal as its digits, so the cents are exact.
    client = tenant.client()
    cents: list[int] = []

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        amount = intent.payload["valor"]
        assert isinstance(amount, Decimal), type(amount)
        cents.append(int(amount * 100))
        return {"cents": amount * 100}

    payload: dict[str, Any] = {**pix(ref("decimal")), "valor": valor}
    out = charge(payload)
    assert cents == [1999]
    assert out.intent.payload["valor"] * 100 == 1999
    assert out.intent.normalized["valor"] == "1999"
    # The result holds a Decimal too, stored and replayed exactly.
    assert out.response == {"cents": Decimal("1999.00")}
    again = charge(payload)
    assert again.replayed and again.response == {"cents": Decimal("1999.00")}


def test_a_divergent_candidate_runs_nothing_and_the_frozen_amount_is_used(tenant: Tenant) -> None:
    client = tenant.client()
    seen: list[str] = []

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        seen.append(str(intent.payload["valor"]))
        return tenant.charge(intent)

    r = ref("diverge")
    first = charge(pix(r, valor="180.00"))
    other = charge(pix(r, valor="1800.00"))
    assert not first.intent.diverged
    assert other.intent.diverged and other.replayed
    assert other.intent.payload["valor"] == "180.00"
    assert seen == ["180.00"]
    assert [c["amount_cents"] for c in tenant.charges()] == [18000]


def test_a_divergent_redelivery_after_a_death_before_the_claim_acts_on_the_frozen_payload(tenant: Tenant) -> None:
    # The first delivery recorded the intent and died before claiming.
    client = tenant.client()
    r = ref("frozen-first")
    client.record("pix.cobranca", pix(r, valor="180.00"))

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    out = charge(pix(r, valor="1800.00"))
    assert out.intent.diverged and not out.replayed
    assert [c["amount_cents"] for c in tenant.charges()] == [18000]


# -- the lazy candidate --------------------------------------------------------


def test_lazy_candidate_calls_the_model_only_when_nothing_is_frozen(tenant: Tenant) -> None:
    client = tenant.client()
    model_calls: list[int] = []
    r = ref("lazy")

    def model() -> dict[str, str]:
        model_calls.append(1)
        return pix(r, valor="180.00")

    def model_again() -> dict[str, str]:
        model_calls.append(2)
        return pix(r, valor="999.00")

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    first = charge(model, reference=r)
    second = charge(model_again, reference=r)
    assert model_calls == [1], "a redelivery must not call the model"
    assert second.replayed and not second.intent.diverged
    assert first.response == second.response
    assert [c["amount_cents"] for c in tenant.charges()] == [18000]


def test_a_lazy_candidate_recorded_under_another_reference_is_an_error_naming_both(tenant: Tenant) -> None:
    client = tenant.client()
    r = ref("lazy-mismatch")
    model_calls: list[int] = []

    def model() -> dict[str, str]:
        model_calls.append(1)
        return pix(r + "-other", valor="180.00")

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    with pytest.raises(idem_client.ReferenceMismatch) as e:
        charge(model, reference=r)
    assert (e.value.expected, e.value.recorded) == (r, r + "-other")
    assert r in str(e.value) and r + "-other" in str(e.value)
    assert model_calls == [1]
    assert tenant.charges() == [], "nothing ran, nothing was claimed"


async def test_async_a_lazy_candidate_under_another_reference_is_an_error(tenant: Tenant) -> None:
    client = tenant.async_client()
    r = ref("lazy-mismatch-async")

    async def model() -> dict[str, str]:
        return pix(r + "-other", valor="180.00")

    async def effect(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    with pytest.raises(idem_client.ReferenceMismatch):
        await client.run("pix.cobranca", effect, model, reference=r)
    assert tenant.charges() == []
    await client.aclose()


# -- concurrency -------------------------------------------------------------------


def test_32_threads_on_one_intent_execute_once(tenant: Tenant) -> None:
    client = tenant.client()
    r = ref("threads")
    runs: list[int] = []
    lock = threading.Lock()

    @client.once("pix.cobranca", on_in_flight="wait", max_wait=60)
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        with lock:
            runs.append(1)
        time.sleep(0.2)
        return tenant.charge(intent)

    outs: list[idem_client.Outcome[Any]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(32)

    def one() -> None:
        barrier.wait()
        try:
            o = charge(pix(r))
            with lock:
                outs.append(o)
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(runs) == 1
    assert sum(1 for o in outs if not o.replayed) == 1
    assert len({json.dumps(o.response, sort_keys=True) for o in outs}) == 1
    assert len(tenant.charges()) == 1


async def test_32_asyncio_tasks_on_one_intent_execute_once(tenant: Tenant) -> None:
    r = ref("tasks")
    runs: list[int] = []
    async with tenant.async_client() as client:

        @client.once("pix.cobranca")
        async def charge(intent: idem_client.Intent) -> dict[str, Any]:
            runs.append(1)
            await asyncio.sleep(0.2)
            return await asyncio.to_thread(tenant.charge, intent)

        outs = await asyncio.gather(*(charge(pix(r)) for _ in range(32)))
    assert len(runs) == 1
    assert sum(1 for o in outs if not o.replayed) == 1
    assert len({json.dumps(o.response, sort_keys=True) for o in outs}) == 1
    assert len(tenant.charges()) == 1


# -- kills before and after the effect -----------------------------------------------


def run_worker(tenant: Tenant, reference: str, kill: str = "", reconcile: str = "") -> dict[str, Any] | None:
    env = dict(os.environ, IDEM_URL=tenant.url, IDEM_TOKEN=tenant.token, IDEM_REF=reference,
               IDEM_KILL=kill, IDEM_RECONCILE=reconcile, IDEM_LEASE_MS="1000")
    done = subprocess.run([sys.executable, os.path.join(HERE, "worker.py")], env=env, capture_output=True, text=True, timeout=120)
    if kill:
        assert done.returncode == -9, done.stderr
        return None
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("kill", ["before", "after"])
def test_killed_worker_then_rerun_without_reconcile_is_uncertain_and_runs_nothing(tenant: Tenant, kill: str) -> None:
    r = ref(f"kill-{kill}")
    run_worker(tenant, r, kill=kill)
    charged = len(tenant.charges())
    assert charged == (1 if kill == "after" else 0)
    time.sleep(1.2)  # the killed worker's lease runs out
    out = run_worker(tenant, r)
    assert out == {"ok": False, "error": "Uncertain", "status": 202}
    assert len(tenant.charges()) == charged
    # It stays uncertain, listed for a person, and a second rerun says so at once.
    again = run_worker(tenant, r)
    assert again is not None and again["error"] == "Uncertain"


@pytest.mark.parametrize("kill", ["before", "after"])
def test_killed_worker_then_rerun_with_reconcile_charges_exactly_once(tenant: Tenant, kill: str) -> None:
    r = ref(f"reconcile-{kill}")
    run_worker(tenant, r, kill=kill)
    time.sleep(1.2)
    out = run_worker(tenant, r, reconcile="resend")
    assert out is not None and out["ok"] and out["reconciled"]
    assert len(tenant.charges()) == 1
    assert tenant.charges()[0]["amount_cents"] == 18000
    later = run_worker(tenant, r)
    assert later is not None and later["replayed"] and later["reconciled"]
    assert len(tenant.charges()) == 1


def test_reconcile_returning_none_runs_the_effect_under_the_same_key(tenant: Tenant) -> None:
    r = ref("none-found")
    run_worker(tenant, r, kill="before")
    time.sleep(1.2)
    out = run_worker(tenant, r, reconcile="none-found")
    assert out is not None and out["ok"] and not out["reconciled"] and out["attempt"] == 2
    assert len(tenant.charges()) == 1


def test_an_exception_from_the_effect_is_uncertain_at_once(tenant: Tenant) -> None:
    client = tenant.client()
    r = ref("raises")

    @client.once("pix.cobranca", lease_ms=60_000)
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        raise TimeoutError("the PSP did not answer")

    with pytest.raises(TimeoutError):
        charge(pix(r))
    # No waiting for the 60 s lease: the next call learns it is uncertain now.
    started = time.monotonic()
    with pytest.raises(idem_client.Uncertain) as e:
        charge(pix(r))
    assert time.monotonic() - started < 5
    assert len(e.value.key) == 64 and e.value.previous["token"] == 1
    action = client.get_action(e.value.key)
    assert action["state"] == "uncertain"


@pytest.mark.parametrize("extra", [16, 200_000])
def test_a_result_over_the_outcome_limit_is_uncertain_never_bad_input(tenant: Tenant, extra: int) -> None:
    # Just over the server's 1 MiB, and far over it: the server reads the
    # token wherever it is and marks the action uncertain before the 413.
    client = tenant.client()
    r = ref(f"huge-{extra}")

    @client.once("pix.cobranca", lease_ms=60_000)
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return {"receipt": "r" * ((1 << 20) + extra)}

    with pytest.raises(idem_client.OutcomeTooLarge) as e:
        charge(pix(r))
    assert not isinstance(e.value, idem_client.Unprocessable)
    assert e.value.status == 413 and e.value.limit == 1 << 20
    assert e.value.marked_uncertain is True
    with pytest.raises(idem_client.Uncertain) as u:
        charge(pix(r))
    assert client.get_action(u.value.key)["state"] == "uncertain"


async def test_async_a_result_over_the_outcome_limit_is_uncertain(tenant: Tenant) -> None:
    r = ref("huge-async")
    async with tenant.async_client() as client:

        async def charge(intent: idem_client.Intent) -> Any:
            return {"receipt": "r" * ((1 << 20) + 200_000)}

        with pytest.raises(idem_client.OutcomeTooLarge) as e:
            await client.run("pix.cobranca", charge, pix(r))
        assert e.value.marked_uncertain is True
        with pytest.raises(idem_client.Uncertain):
            await client.run("pix.cobranca", charge, pix(r))


# -- lost answers ---------------------------------------------------------------------


@pytest.fixture
def proxy(tenant: Tenant) -> Any:
    p = FaultProxy(tenant.url)
    yield p
    p.close()


def test_a_lost_record_and_claim_answer_is_recovered_with_the_same_claim(tenant: Tenant, proxy: FaultProxy) -> None:
    client = tenant.client(base_url=proxy.url)
    proxy.add("POST", r"^/v1/intents$", "lose_answer")
    r = ref("lost-begin")

    @client.once("pix.cobranca", on_in_flight="raise")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    out = charge(pix(r))
    assert not out.replayed and out.attempt == 1
    assert [s for m, p_, s in proxy.log if p_ == "/v1/intents"] == [201, 200], "the first answer was lost"
    assert len(tenant.charges()) == 1


def test_attempt_ids_do_not_follow_the_random_module() -> None:
    # Two workers that seed `random` alike (reproducible training runs, a
    # test plugin) must still name their attempts apart: the server answers
    # a held claim to its own attempt, so a shared id would run an effect
    # twice.
    from idem_client import _protocol  # pyright: ignore[reportPrivateUsage]

    random.seed(7)
    first = _protocol.new_attempt_id()
    random.seed(7)
    second = _protocol.new_attempt_id()
    assert first != second and first.startswith("py-") and len(first) == 35


def test_a_begin_repeated_by_its_attempt_gets_the_same_token(tenant: Tenant) -> None:
    # The protocol under the client's retry: the same attempt_id while its
    # claim is held answers that claim again; another attempt is in flight.
    h = {"authorization": f"Bearer {tenant.token}"}
    doc = httpx.post(tenant.url + "/v1/intents", headers=h, json={"action": "pix.cobranca", "payload": pix(ref("attempt"))}).json()
    begin = tenant.url + f"/v1/actions/{doc['key']}/begin"
    first = httpx.post(begin, headers=h, json={"action": "pix.cobranca", "attempt_id": "w-1"})
    again = httpx.post(begin, headers=h, json={"action": "pix.cobranca", "attempt_id": "w-1"})
    other = httpx.post(begin, headers=h, json={"action": "pix.cobranca", "attempt_id": "w-2"})
    assert (first.status_code, again.status_code, other.status_code) == (201, 201, 409)
    assert first.json()["token"] == again.json()["token"] == 1
    assert other.json()["type"] == "urn:idem:problem:action-in-flight"
    assert int(other.headers["retry-after"]) >= 1


def test_a_lost_complete_answer_is_retried_and_accepted(tenant: Tenant, proxy: FaultProxy) -> None:
    client = tenant.client(base_url=proxy.url)
    proxy.add("POST", r"/complete$", "lose_answer")
    r = ref("lost-complete")

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    out = charge(pix(r))
    assert not out.replayed
    assert [s for m, p_, s in proxy.log if p_.endswith("/complete")] == [200, 200]
    assert charge(pix(r)).replayed
    assert len(tenant.charges()) == 1


def test_503s_are_retried_with_retry_after(tenant: Tenant, proxy: FaultProxy) -> None:
    client = tenant.client(base_url=proxy.url, max_retries=2)
    proxy.add("POST", r"^/v1/intents$", "503", times=2)

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> dict[str, Any]:
        return tenant.charge(intent)

    assert not charge(pix(ref("503"))).replayed
    proxy.add("POST", r"^/v1/intents$", "503", times=3)
    with pytest.raises(idem_client.Unavailable):
        charge(pix(ref("503-again")))


# -- stale token, deadline and renewal ---------------------------------------------


def test_a_claim_lost_to_a_takeover_raises_stale_token_on_complete(tenant: Tenant, proxy: FaultProxy) -> None:
    client = tenant.client(base_url=proxy.url, max_retries=0)
    # Every renewal is refused on the way: the lease runs out mid-effect.
    proxy.add("POST", r"/renew$", "503", times=1000)
    r = ref("stale")
    other = tenant.client()
    took_over = threading.Event()

    @client.once("pix.cobranca", lease_ms=400)
    def slow(intent: idem_client.Intent) -> str:
        took_over.wait(10)
        return "late"

    def takeover() -> None:
        time.sleep(0.8)
        with pytest.raises(idem_client.Uncertain):
            other.run("pix.cobranca", lambda i: "x", pix(r))
        took_over.set()

    t = threading.Thread(target=takeover)
    t.start()
    with pytest.raises(idem_client.StaleToken):
        slow(pix(r))
    t.join()


def test_an_effect_longer_than_its_lease_keeps_the_claim_by_renewal(tenant: Tenant) -> None:
    client = tenant.client()
    r = ref("renew")
    deadlines: list[float] = []

    @client.once("pix.cobranca", lease_ms=600)
    def long(intent: idem_client.Intent) -> dict[str, Any]:
        assert intent.deadline is not None
        deadlines.append(intent.deadline.timestamp())
        time.sleep(2.0)
        assert intent.deadline is not None
        deadlines.append(intent.deadline.timestamp())
        return tenant.charge(intent)

    def contender() -> None:
        time.sleep(1.2)
        with pytest.raises(idem_client.InFlight) as e:
            tenant.client().run("pix.cobranca", lambda i: "no", pix(r), on_in_flight="raise")
        assert e.value.retry_after >= 0

    t = threading.Thread(target=contender)
    t.start()
    out = long(pix(r))
    t.join()
    assert not out.replayed and out.attempt == 1
    assert deadlines[1] > deadlines[0] + 1.0
    assert len(tenant.charges()) == 1


def test_one_renewal_thread_serves_every_claim_of_a_client(tenant: Tenant) -> None:
    # Eight effects at once, each twice its lease, on one client: each keeps
    # its claim (a contender is told in flight), and the client renews them
    # all from one thread, never a thread per effect.
    def renewers() -> int:
        # Other tests' clients may keep an idle one for a while.
        return sum(1 for t in threading.enumerate() if t.name == "idem-renew")

    before = renewers()
    client = tenant.client()
    refs = [ref(f"renew-many-{i}") for i in range(8)]
    started = threading.Barrier(9)

    def long(intent: idem_client.Intent) -> dict[str, Any]:
        started.wait()
        time.sleep(1.2)
        return tenant.charge(intent)

    outs: list[idem_client.Outcome[dict[str, Any]]] = []
    workers = [
        threading.Thread(target=lambda r=r: outs.append(client.run("pix.cobranca", long, pix(r), lease_ms=500)))
        for r in refs
    ]
    for w in workers:
        w.start()
    started.wait()
    assert renewers() <= before + 1
    time.sleep(0.7)  # past every lease: only renewal keeps the claims
    for r in refs:
        with pytest.raises(idem_client.InFlight):
            tenant.client().run("pix.cobranca", lambda i: "no", pix(r), on_in_flight="raise")
    for w in workers:
        w.join()
    assert sorted(o.attempt for o in outs) == [1] * 8 and not any(o.replayed for o in outs)
    assert len(tenant.charges()) == 8
    # Sequential effects reuse the thread.
    for i in range(5):
        client.run("pix.cobranca", lambda i: {"ok": True}, pix(ref(f"renew-seq-{i}")))
    assert renewers() <= before + 1


# -- typed errors and bad input -----------------------------------------------------------


def test_typed_errors(tenant: Tenant) -> None:
    bad = idem_client.Client(tenant.url, "not-a-token")
    with pytest.raises(idem_client.Unauthorized) as u:
        bad.run("pix.cobranca", lambda i: 1, pix(ref("x")))
    assert u.value.status == 401 and u.value.type == "urn:idem:problem:unauthorized"
    client = tenant.client()
    with pytest.raises(idem_client.Unprocessable) as e:
        client.run("no.such.action", lambda i: 1, pix(ref("x")))
    assert e.value.status == 422 and "no.such.action" in e.value.detail
    missing = pix(ref("x"))
    del missing["valor"]
    with pytest.raises(idem_client.Unprocessable) as e2:
        client.run("pix.cobranca", lambda i: 1, missing)
    assert "valor" in e2.value.detail
    assert isinstance(e.value, idem_client.ProblemError)
    down = idem_client.Client("http://127.0.0.1:9", tenant.token, max_retries=0)
    with pytest.raises(idem_client.Unavailable):
        down.run("pix.cobranca", lambda i: 1, pix(ref("x")))


def test_failed_from_the_effect_is_recorded_final_or_retryable(tenant: Tenant) -> None:
    client = tenant.client()
    r1, r2 = ref("final"), ref("retryable")
    with pytest.raises(idem_client.Failed):
        client.run("pix.cobranca", _declined(False), pix(r1))
    with pytest.raises(idem_client.FailedForGood) as e:
        client.run("pix.cobranca", lambda i: "never", pix(r1))
    assert e.value.error == "card declined"
    with pytest.raises(idem_client.Failed):
        client.run("pix.cobranca", _declined(True), pix(r2))
    again = client.run("pix.cobranca", lambda i: {"ok": True}, pix(r2))
    assert again.response == {"ok": True} and again.attempt == 2


def _declined(retryable: bool) -> Any:
    def effect(intent: idem_client.Intent) -> Any:
        raise idem_client.Failed("card declined", retryable=retryable)

    return effect


def test_tenant_disabled(tenant: Tenant) -> None:
    client = tenant.client()
    client.run("pix.cobranca", lambda i: 1, pix(ref("before-disable")))
    cmd = [tenant.srv.binary, "tenant", "disable", tenant.name, "--data-dir", str(tenant.srv.data_dir)]
    if tenant.srv.database_url:
        cmd += ["--database-url", tenant.srv.database_url]
    subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, IDEMPOTENCY_HMAC_KEY=os.environ.get("IDEMPOTENCY_HMAC_KEY", "idem-client-tests-only-secret-0123456789")))
    time.sleep(1.2)  # tokens are re-checked within a second
    with pytest.raises((idem_client.TenantDisabled, idem_client.Unauthorized)) as e:
        client.run("pix.cobranca", lambda i: 1, pix(ref("after-disable")))
    assert e.value.status in (401, 403)


def test_bad_candidates_are_refused_before_any_effect(tenant: Tenant) -> None:
    client = tenant.client()
    ran: list[int] = []

    @client.once("pix.cobranca")
    def charge(intent: idem_client.Intent) -> int:
        ran.append(1)
        return 1

    with pytest.raises(TypeError):
        charge(["not", "a", "dict"])
    with pytest.raises(TypeError):
        charge(lambda: pix("x"))  # a callable without reference=
    with pytest.raises(TypeError):
        client.once("pix.cobranca", on_in_flight="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        charge(lambda: "not a dict", reference=ref("lazy-bad"))
    assert ran == []


def test_an_answer_outside_the_protocol_is_named_not_guessed(tenant: Tenant) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"key": "0" * 64})

    client = idem_client.Client("http://idem.invalid", "t", http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    with pytest.raises(idem_client.ProblemError) as e:
        client.run("pix.cobranca", lambda i: 1, pix("x"))
    assert e.value.type == "about:blank"


# -- events ------------------------------------------------------------------------------


def test_event_claims_dedupe_and_release_on_error(tenant: Tenant) -> None:
    client = tenant.client()
    msg = ref("msg")
    with client.events.claim("rabbitmq", msg) as ev:
        assert not ev.duplicate
    with client.events.claim("rabbitmq", msg) as ev:
        assert ev.duplicate
    other = ref("msg2")
    with pytest.raises(RuntimeError):
        with client.events.claim("rabbitmq", other) as ev:
            raise RuntimeError("handler failed")
    with client.events.claim("rabbitmq", other) as ev:
        assert not ev.duplicate and ev.attempt == 2


async def test_async_event_claims(tenant: Tenant) -> None:
    async with tenant.async_client() as client:
        msg = ref("amsg")
        async with client.events.claim("webhook", msg) as ev:
            assert not ev.duplicate
        async with client.events.claim("webhook", msg) as ev:
            assert ev.duplicate


async def test_async_uncertain_and_reconcile(tenant: Tenant) -> None:
    r = ref("async-uncertain")
    async with tenant.async_client() as client:

        async def boom(intent: idem_client.Intent) -> Any:
            raise ConnectionError("reset by peer")

        with pytest.raises(ConnectionError):
            await client.run("pix.cobranca", boom, pix(r))
        with pytest.raises(idem_client.Uncertain):
            await client.run("pix.cobranca", boom, pix(r))

        async def look_up(intent: idem_client.Intent) -> Any:
            return {"found": intent.key}

        out = await client.run("pix.cobranca", boom, pix(r), reconcile=look_up)
        assert out.reconciled and out.response == {"found": out.key}
        again = await client.run("pix.cobranca", boom, pix(r))
        assert again.replayed and again.reconciled


# -- trace context ----------------------------------------------------------------------


def test_the_caller_s_trace_goes_with_every_call_and_never_into_the_key(tenant: Tenant) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("checkout")
    seen: list[str | None] = []
    real = httpx.Client()

    def forward(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("traceparent"))
        return real.send(request)

    client = tenant.client(http_client=httpx.Client(transport=httpx.MockTransport(forward)))
    reference = ref("traced")
    for attempt in range(2):
        with tracer.start_as_current_span(f"attempt {attempt}") as span:
            trace_id = format(span.get_span_context().trace_id, "032x")
            span_id = format(span.get_span_context().span_id, "016x")
            n = len(seen)
            client.run("pix.cobranca", tenant.charge, pix(reference))
            assert seen[n:] and all(t and t.startswith(f"00-{trace_id}-{span_id}-") for t in seen[n:]), seen[n:]
    # Two traces, one charge: the trace context is never part of the key.
    assert len(tenant.charges()) == 1
    # Without a current span, nothing is sent.
    n = len(seen)
    client.run("pix.cobranca", tenant.charge, pix(ref("untraced")))
    assert seen[n:] and all(t is None for t in seen[n:]), seen[n:]


async def test_the_async_client_sends_the_caller_s_trace_too(tenant: Tenant) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("checkout")
    seen: list[str | None] = []
    real = httpx.AsyncClient()

    async def forward(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("traceparent"))
        return await real.send(request)

    client = tenant.async_client(http_client=httpx.AsyncClient(transport=httpx.MockTransport(forward)))
    with tracer.start_as_current_span("attempt") as span:
        trace_id = format(span.get_span_context().trace_id, "032x")
        await client.run("pix.cobranca", tenant.charge, pix(ref("traced-async")))
    assert seen and all(t is not None and t.startswith(f"00-{trace_id}-") for t in seen), seen
    await real.aclose()
