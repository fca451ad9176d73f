"""idem's own MCP server (`idem mcp serve`), driven by the official Python
MCP SDK: its tools, the reference estimate, and a reconciliation."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from test_gateway import IDEM, Env, charge_args, text_of

pytestmark = pytest.mark.anyio

REFERENCE = {"conversations": 30000, "tokens_in": 8000, "tokens_out": 600, "price_in": "0,015",
             "price_out": "0,075", "price_unit": "1k", "ticket": "1,20", "duplicate_rate": 3}


# The wire contract /v1 serves, committed beside the clients.
OPENAPI = json.loads((pathlib.Path(__file__).resolve().parents[3] / "clients" / "conformance" / "openapi.json").read_text())


def members_of(schema: str) -> set[str]:
    return set(OPENAPI["components"]["schemas"][schema]["properties"])


async def own(env: Env) -> Any:
    params = StdioServerParameters(command=IDEM, args=["mcp", "serve", "--tenant", env.tenant, *env.db_args()], env=env.env())
    return stdio_client(params, errlog=open(env.tmp / "own.log", "a"))


async def test_tools_list_annotations_and_the_reference_estimate(env: Env) -> None:
    async with await own(env) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            writes = {"reconcile_action", "supersede_intent"}
            assert set(tools) == {"estimate_duplicate_cost", "live_summary", "list_uncertain_actions",
                                  "get_intent", "get_action", *writes}
            for name, t in tools.items():
                assert t.annotations is not None
                assert t.annotations.read_only_hint is (name not in writes), name
                # The ones that write settle a charge's state: hosts ask first.
                assert t.annotations.destructive_hint is (name in writes), name
            est = await s.call_tool("estimate_duplicate_cost", REFERENCE)
            assert not est.is_error
            assert "R$ 148,50" in text_of(est)
            figures = est.structured_content
            assert figures["monthly_token_waste"] == "148.50"
            assert figures["annual_token_waste"] == "1782.00"
            assert figures["break_even_conversations"] == "124"
            assert figures["cost_per_call"] == "0.165"
            cli = subprocess.run([IDEM, "cost", "--conversations", "30000", "--tokens-in", "8000", "--tokens-out", "600",
                                  "--price-in", "0,015", "--price-out", "0,075", "--price-unit", "1k", "--ticket", "1,20",
                                  "--duplicate-rate", "3", "--json"], capture_output=True, text=True, check=True)
            assert figures == json.loads(cli.stdout), "the same figures as idem cost --json"
            for bad, named in [({**REFERENCE, "tokens_in": "muitos"}, "tokens_in"),
                               ({k: v for k, v in REFERENCE.items() if k != "ticket"}, "ticket"),
                               ({**REFERENCE, "price_currency": "XYZ"}, "price_currency"),
                               ({**REFERENCE, "surprise": 1}, "surprise"),
                               # Too precise: named as the tool's argument, never the link's `pi`.
                               ({**REFERENCE, "price_in": "0.0151234567890123"}, "price_in")]:
                refused = await s.call_tool("estimate_duplicate_cost", bad)
                assert refused.is_error and f"`{named}`" in text_of(refused), text_of(refused)


async def test_an_uncertain_charge_is_listed_read_and_reconciled(env: Env) -> None:
    guard = env.guard_file(on_uncertain="refuse", lease_ms=1000, delay_ms=3000)
    async with env.agent(guard) as agent:
        # The upstream answers after the lease: the gateway marks it uncertain.
        late = await agent.call_tool("create_pix_charge", charge_args("FAT-U"))
        assert late.is_error and "unknown" in text_of(late)
        key = late.meta["idem"]["key"]
    async with await own(env) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            listed = await s.call_tool("list_uncertain_actions", {})
            assert [a["key"] for a in listed.structured_content["actions"]] == [key]
            intent = await s.call_tool("get_intent", {"action": "pix.cobranca", "reference": "FAT-U"})
            assert intent.structured_content["frozen"]["valor"] == "180.00"
            # The same view /v1 answers with: the document's members, no
            # more, no fewer.
            assert set(intent.structured_content) == members_of("IntentView")
            no_evidence = await s.call_tool("reconcile_action", {"key": key, "outcome": "completed"})
            assert no_evidence.is_error and "`response`" in text_of(no_evidence)
            # Re-opening would let the next call charge again: refused, and
            # the action stays uncertain.
            reopen = await s.call_tool("reconcile_action", {"key": key, "outcome": "failed", "error": "declined",
                                                            "retryable": True})
            assert reopen.is_error and "`retryable`" in text_of(reopen) and "re-open" in text_of(reopen)
            still = await s.call_tool("get_action", {"key": key})
            assert still.structured_content["state"] in ("uncertain", "started"), still.structured_content
            receipt = env.executions()[0]
            done = await s.call_tool("reconcile_action", {"key": key, "outcome": "completed", "response": {"charge_id": receipt["charge_id"]}})
            assert not done.is_error, text_of(done)
            action = await s.call_tool("get_action", {"key": key})
            assert action.structured_content["state"] == "completed" and action.structured_content["reconciled"]
            assert set(action.structured_content) == members_of("ActionResponse")
            assert done.structured_content == action.structured_content
            again = await s.call_tool("reconcile_action", {"key": key, "outcome": "failed", "error": "x"})
            assert again.is_error and "unknown is reconciled" in text_of(again)
            summary = await s.call_tool("live_summary", {"hours": 1})
            assert summary.structured_content["uncertain_now"] == 0
    async with env.agent(guard) as agent:
        replay = await agent.call_tool("create_pix_charge", charge_args("FAT-U"))
        assert replay.meta["idem"]["replayed"] and replay.meta["idem"]["reconciled"]
        # The provider's JSON came back as the tool's structured result.
        assert replay.structured_content == {"charge_id": receipt["charge_id"]}, replay
    assert len(env.executions()) == 1


async def test_one_outcome_bound_on_every_mcp_door(env: Env) -> None:
    """`--max-outcome-bytes` (here its environment variable, as `idem serve`
    reads it) bounds what the gateway stores for replay and the evidence
    idem's own server records, as it bounds `/v1`."""
    guard = env.guard_file(pad=2000)
    big = charge_args("FAT-BIG")
    async with env.agent(guard, IDEM_MAX_OUTCOME_BYTES="1024") as agent:
        first = await agent.call_tool("create_pix_charge", big)
        assert not first.is_error, text_of(first)
        key = first.meta["idem"]["key"]
        again = await agent.call_tool("create_pix_charge", big)
        assert again.meta["idem"]["replayed"], again
        assert "1024-byte bound (--max-outcome-bytes)" in text_of(again), text_of(again)
    assert len(env.executions()) == 1, "executed once, whatever was stored"
    evidence = {"key": key, "outcome": "completed", "response": {"receipt": "r" * 2000}}
    params = StdioServerParameters(command=IDEM, args=["mcp", "serve", "--tenant", env.tenant, *env.db_args()],
                                   env=env.env(IDEM_MAX_OUTCOME_BYTES="1024"))
    async with stdio_client(params, errlog=open(env.tmp / "own.log", "a")) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            over = await s.call_tool("reconcile_action", evidence)
            assert over.is_error and "--max-outcome-bytes" in text_of(over) and "`response`" in text_of(over), text_of(over)
    # Under the default bound the same evidence is not too large: what
    # refuses it is the action's state (completed, nothing to settle).
    async with await own(env) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            fits = await s.call_tool("reconcile_action", evidence)
            assert fits.is_error and "--max-outcome-bytes" not in text_of(fits), text_of(fits)


# The corpus of number mistakes every surface runs (the page and the CLI in
# server/tests/it/mistakes.rs): here through the official SDK.
CORPUS = json.loads((pathlib.Path(__file__).resolve().parents[3] / "testkit" / "corpus" / "numbers.json").read_text())


def carries(link: str, key: str, row: dict[str, Any]) -> bool:
    """Whether a scenario link carries what the row reads (`read_as`, or no
    such key when it is null)."""
    pairs = link.replace("?", "&").split("&")
    if row.get("read_as") is None:
        return not any(p.startswith(f"{key}=") for p in pairs)
    return f"{key}={row['read_as']}" in pairs


async def test_every_number_mistake_in_the_estimate(env: Env) -> None:
    ran = 0
    async with await own(env) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for row in CORPUS["rows"]:
                if "mcp" not in row.get("surfaces", ["mcp"]):
                    continue
                field = CORPUS["fields"][row["field"]]
                args = dict(CORPUS["contexts"][row.get("context", "bhd")]["mcp"])
                args[field["mcp"]] = row["json"] if "json" in row else row["text"]
                if row["locale"]:
                    args["locale"] = row["locale"]
                what = f"{row['class']} {args[field['mcp']]!r} {row['locale']}"
                res = await s.call_tool("estimate_duplicate_cost", args)
                if row["verdict"] == "refused":
                    assert res.is_error, f"{what}: a figure for a refused number: {res.structured_content}"
                    assert row["says"]["mcp"] in text_of(res), f"{what}: {text_of(res)}"
                    assert f"`{field['mcp']}`" in text_of(res), f"{what}: {text_of(res)}"
                else:
                    assert not res.is_error, f"{what}: {text_of(res)}"
                    got = res.structured_content
                    warnings = {got.get("unit_warning"), got.get("rate_warning")} - {None}
                    if row["verdict"] == "warned":
                        assert row["warns"]["mcp"] in warnings, f"{what}: {got}"
                        assert ("Warning:" in text_of(res)) or ("Aviso:" in text_of(res)), f"{what}: {text_of(res)}"
                    else:
                        assert not warnings, f"{what}: read, yet {warnings}"
                    if row["verdict"] == "read" or row.get("read_as") is not None:
                        assert carries(got["link"], field["link"], row), f"{what}: {got['link']}"
                ran += 1
    assert ran >= 80, ran


# The hand-computed contracts (testkit/fixtures/contracts.json): the link's
# keys as the estimate's arguments, every value a string read in en-US (the
# link's notation), every figure compared exactly.
CONTRACTS = json.loads((pathlib.Path(__file__).resolve().parents[3] / "testkit" / "fixtures" / "contracts.json").read_text())
ARGUMENT = {"c": "conversations", "ti": "tokens_in", "to": "tokens_out", "pi": "price_in", "po": "price_out",
            "pca": "price_cached", "u": "price_unit", "pc": "price_currency", "rc": "revenue_currency", "px": "fx",
            "pd": "fx_date", "cs": "cached_share", "cl": "calls", "dcs": "dup_cache_share", "tk": "ticket",
            "d": "duplicate_rate", "ms": "money_share", "ac": "avg_charge", "oc": "ops_cost", "cr": "claim_rate"}


async def test_every_hand_computed_contract_in_the_estimate(env: Env) -> None:
    from decimal import Decimal
    ran = 0
    async with await own(env) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for c in CONTRACTS["contracts"]:
                pairs = dict(kv.split("=", 1) for kv in c["link"].split("&"))
                args = {ARGUMENT[k]: v for k, v in pairs.items() if k != "v"}
                args["locale"] = "en-US"
                res = await s.call_tool("estimate_duplicate_cost", args)
                assert not res.is_error, f"{c['name']}: {text_of(res)}"
                got = res.structured_content
                for key, want in c["exact"].items():
                    if want is None:
                        assert got.get(key) is None, f"{c['name']}: {key} {got.get(key)}"
                        continue
                    assert round(Decimal(got[key]), 10) == round(Decimal(want), 10), f"{c['name']}: {key} {got[key]} != {want}"
                assert got["currency"] == c["currency"], c["name"]
                # Every contract's prices sit in the table and its rate the
                # right way round: nothing to warn of.
                assert got["unit_warning"] is None and got["rate_warning"] is None, f"{c['name']}: {text_of(res)}"
                ran += 1
    assert ran == len(CONTRACTS["contracts"]) and ran >= 20, ran


async def test_the_estimates_sentence_writes_its_numbers_as_the_page_does(env: Env) -> None:
    async with await own(env) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            pt = await s.call_tool("estimate_duplicate_cost", {**REFERENCE, "conversations": 123456})
            assert "3.704 (expected value 3.703,68) duplicated conversations" in text_of(pt), text_of(pt)
            en = await s.call_tool("estimate_duplicate_cost", {**REFERENCE, "conversations": 123456, "locale": "en-US",
                                                               "price_in": "0.015", "price_out": "0.075", "ticket": "1.20"})
            assert "3,704 (expected value 3,703.68) duplicated conversations" in text_of(en), text_of(en)
            whole = await s.call_tool("estimate_duplicate_cost", REFERENCE)
            assert "; 900 duplicated conversations" in text_of(whole), text_of(whole)
