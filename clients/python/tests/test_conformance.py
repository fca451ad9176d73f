"""The conformance scenarios (clients/conformance/scenarios.json), run by
this client against a real idem serve on SQLite and PostgreSQL. The same
file is run by the TypeScript client's tests; a step this runner does not
know fails the scenario."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest

import idem_client
from conftest import Tenant
from faultproxy import FaultProxy
from support import pix

HERE = Path(__file__).resolve().parent
CONFORMANCE = HERE.parent.parent / "conformance"
DOCUMENT: dict[str, Any] = json.loads((CONFORMANCE / "scenarios.json").read_text(encoding="utf-8"))
SCHEMA: dict[str, Any] = json.loads((CONFORMANCE / "scenarios.schema.json").read_text(encoding="utf-8"))
SCENARIOS: list[dict[str, Any]] = DOCUMENT["scenarios"]
#: The step members, as the schema names them: the one list both runners read.
KNOWN = set(SCHEMA["$defs"]["step"]["properties"])
#: What this runner implements; it must be exactly the schema's members.
HANDLED = {
    "run", "lazy", "wrong_reference", "reconcile", "effect", "lease_ms", "on_in_flight", "max_retries", "via_proxy",
    "token", "action", "expect", "expect_error", "after_ms", "concurrent", "expect_replayed",
    "parallel", "worker", "proxy", "executions", "model_calls", "ledger_cents",
}


def test_the_scenarios_follow_their_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(DOCUMENT), key=str)
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_this_clients_problem_table_is_the_documents() -> None:
    from idem_client._errors import _BY_TYPE  # pyright: ignore[reportPrivateUsage]

    document = json.loads((CONFORMANCE / "openapi.json").read_text(encoding="utf-8"))
    listed = set(document["components"]["schemas"]["ProblemDoc"]["properties"]["type"]["enum"])
    assert set(_BY_TYPE) == listed, f"mapped but never sent: {set(_BY_TYPE) - listed}; sent but not mapped: {listed - set(_BY_TYPE)}"


OPENAPI: dict[str, Any] = json.loads((CONFORMANCE / "openapi.json").read_text(encoding="utf-8"))


def test_each_problem_type_raises_the_class_the_documents_table_names() -> None:
    import idem_client
    from idem_client._errors import problem_from

    table: dict[str, Any] = OPENAPI["components"]["schemas"]["ProblemDoc"]["x-idem-problems"]
    classes: dict[str, type[idem_client.ProblemError]] = {
        "unauthorized": idem_client.Unauthorized,
        "tenant_disabled": idem_client.TenantDisabled,
        "in_flight": idem_client.InFlight,
        "stale_token": idem_client.StaleToken,
        "unprocessable": idem_client.Unprocessable,
        "outcome_too_large": idem_client.OutcomeTooLarge,
        "retry": idem_client.Unavailable,
        "defect": idem_client.ProblemError,
    }
    for urn, row in table.items():
        assert row["class"] in classes, f"{urn}: class {row['class']} is none this client knows"
        assert type(problem_from(400, {"type": urn, "title": "t"}, 0.0)) is classes[row["class"]], urn
    # The members this client reads are the ones the document declares.
    assert "marked_uncertain" in table["urn:idem:problem:outcome-too-large"]["members"]
    e = problem_from(413, {"type": "urn:idem:problem:outcome-too-large", "title": "t", "marked_uncertain": True}, 0.0)
    assert isinstance(e, idem_client.OutcomeTooLarge) and e.marked_uncertain
#: Each expectation a step may state, and the answer members it is read from.
EXPECTED: dict[str, list[str]] = {
    name: spec.get("x-wire", []) for name, spec in SCHEMA["$defs"]["step"]["properties"]["expect"]["properties"].items()
}


def wire_member(ref: str) -> bool:
    """Whether `Schema.member` or `Schema[status].member` is in the document."""
    m = re.fullmatch(r"(\w+)(?:\[(\w+)\])?\.(\w+)", ref)
    assert m, f"not Schema.member or Schema[status].member: {ref}"
    name, status, member = m.groups()
    schemas = OPENAPI["components"]["schemas"]

    def members(s: dict[str, Any]) -> set[str]:
        if "$ref" in s:
            return members(schemas[s["$ref"].rsplit("/", 1)[1]])
        return set(s.get("properties", {})).union(*(members(p) for p in s.get("allOf", [])))

    schema = schemas.get(name, {})
    if status is not None:
        variants = [v for v in schema.get("oneOf", []) if v.get("properties", {}).get("status", {}).get("enum") == [status]]
        return len(variants) == 1 and member in members(variants[0])
    return member in members(schema)


def test_every_expectation_is_read_from_a_member_the_document_declares() -> None:
    for name, refs in EXPECTED.items():
        assert refs, f"expect.{name} names no answer member (x-wire)"
        missing = [r for r in refs if not wire_member(r)]
        assert not missing, f"expect.{name} is read from {missing}, which clients/conformance/openapi.json does not declare"


def test_a_member_the_document_lacks_is_refused() -> None:
    # The check above can fail: a renamed or made-up member is not found.
    assert wire_member("BeginResponse[completed].reconciled")
    assert not wire_member("BeginResponse[completed].reconciled_by")
    assert not wire_member("BeginResponse[claimed].reconciled")
    assert not wire_member("IntentResponse.divergence")


def test_this_runner_handles_every_step_member_the_schema_names() -> None:
    assert HANDLED == KNOWN, f"in the schema, not here: {KNOWN - HANDLED}; here, not in the schema: {HANDLED - KNOWN}"


class EffectError(Exception):
    """An error of the effect's own."""


class World:
    """One scenario's tenant, reference, proxy and counters."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.reference = f"conf-{time.monotonic_ns()}"
        self.executions = 0
        self.model_calls = 0
        self.lock = threading.Lock()
        self.proxy: FaultProxy | None = None

    def effect(self, spec: str) -> Callable[[idem_client.Intent], Any]:
        kind, _, arg = spec.partition(":")
        ms = int(arg or 0)

        def run(intent: idem_client.Intent) -> Any:
            with self.lock:
                self.executions += 1
            if kind == "charge":
                return self.tenant.charge(intent)
            if kind == "slow_charge":
                time.sleep(ms / 1000)
                return self.tenant.charge(intent)
            if kind == "slow":
                time.sleep(ms / 1000)
                return "late"
            if kind == "fail_final":
                raise idem_client.Failed("declined by the provider")
            if kind == "throw":
                raise EffectError("the effect's own error")
            raise AssertionError(f"a step names an effect this runner does not know: {spec}")

        return run

    def call(self, step: dict[str, Any]) -> idem_client.Outcome[Any]:
        unknown = set(step) - KNOWN
        assert not unknown, f"a step names options this runner does not know: {unknown}"
        if step.get("after_ms"):
            time.sleep(step["after_ms"] / 1000)
        base = self.proxy.url if step.get("via_proxy") and self.proxy else self.tenant.url
        client = idem_client.Client(base, step.get("token", self.tenant.token), max_retries=step.get("max_retries", 2))
        reconcile: Callable[[idem_client.Intent], Any] | None = None
        if step.get("reconcile") == "resend":
            reconcile = self.tenant.charge
        elif step.get("reconcile") == "never":
            reconcile = lambda intent: None  # noqa: E731
        elif step.get("reconcile") is not None:
            raise AssertionError(f"unknown reconcile {step['reconcile']}")
        payload = pix(self.reference, step["run"]["valor"])

        def model() -> dict[str, str]:
            with self.lock:
                self.model_calls += 1
            return payload

        candidate: Any = model if step.get("lazy") else payload
        return client.run(
            step.get("action", "pix.cobranca"),
            self.effect(step.get("effect", "charge")),
            candidate,
            # A reference= that is not the payload's (the catalog reads
            # referencia_intencao): the client must refuse it.
            reference=self.reference + ("-elsewhere" if step.get("wrong_reference") else ""),
            lease_ms=step.get("lease_ms", 30_000),
            on_in_flight=step.get("on_in_flight", "wait"),
            reconcile=reconcile,
        )

    def check(self, step: dict[str, Any]) -> None:
        wanted = step.get("expect_error")
        if wanted:
            cls = EffectError if wanted == "EffectError" else getattr(idem_client, wanted)
            with pytest.raises(cls):
                self.call(step)
            return
        out = self.call(step)
        for k, v in step.get("expect", {}).items():
            assert EXPECTED.get(k), f"expect.{k} is read from no member the document declares"
            got = out.intent.diverged if k == "diverged" else getattr(out, k)
            assert got == v, f"{k}: {got!r} != {v!r}"

    def step(self, step: dict[str, Any]) -> None:
        if "run" in step and "concurrent" in step:
            with ThreadPoolExecutor(step["concurrent"]) as pool:
                outs = list(pool.map(lambda _: self.call(step), range(step["concurrent"])))
            assert sum(o.replayed for o in outs) == step["expect_replayed"]
        elif "run" in step:
            self.check(step)
        elif "parallel" in step:
            with ThreadPoolExecutor(len(step["parallel"])) as pool:
                for f in [pool.submit(self.check, s) for s in step["parallel"]]:
                    f.result()
        elif "worker" in step:
            env = {**os.environ, "IDEM_URL": self.tenant.url, "IDEM_TOKEN": self.tenant.token,
                   "IDEM_REF": self.reference, "IDEM_KILL": step["worker"]["kill"], "IDEM_LEASE_MS": "1000"}
            done = subprocess.run([sys.executable, str(HERE / "worker.py")], env=env, capture_output=True, timeout=60)
            assert done.returncode == -9, done.stderr.decode()
        elif "proxy" in step:
            if self.proxy is None:
                self.proxy = FaultProxy(self.tenant.url)
            p = step["proxy"]
            self.proxy.add(p["method"], p["path"], "lose_answer" if p["fault"] == "lose_answer" else "503", p.get("times", 1))
        elif {"executions", "model_calls", "ledger_cents"} & set(step):
            if "executions" in step:
                assert self.executions == step["executions"], "executions of the effect"
            if "model_calls" in step:
                assert self.model_calls == step["model_calls"], "model calls"
            if "ledger_cents" in step:
                assert [c["amount_cents"] for c in self.tenant.charges()] == step["ledger_cents"]
        else:
            raise AssertionError(f"a step this runner does not know: {step}")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_conformance(tenant: Tenant, scenario: dict[str, Any]) -> None:
    world = World(tenant)
    try:
        for step in scenario["steps"]:
            world.step(step)
    finally:
        if world.proxy is not None:
            world.proxy.close()
