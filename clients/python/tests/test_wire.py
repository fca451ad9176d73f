"""The client's TypedDicts (idem_client.wire) against the committed OpenAPI
document: each declares exactly its schema's members, with the same ones
required. A member renamed, added or dropped on the server fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from idem_client import wire

DOCUMENT: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent.parent.parent / "conformance" / "openapi.json").read_text(encoding="utf-8")
)
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """One object schema: `$ref` followed, `allOf` merged."""
    if "$ref" in schema:
        return resolve(SCHEMAS[schema["$ref"].rsplit("/", 1)[1]])
    if "allOf" in schema:
        merged: dict[str, Any] = {"properties": {}, "required": []}
        for part in schema["allOf"]:
            p = resolve(part)
            merged["properties"].update(p.get("properties", {}))
            merged["required"] += p.get("required", [])
        return merged
    return schema


def schema_of(name: str) -> dict[str, Any]:
    base, _, status = name.partition("/")
    schema = SCHEMAS[base]
    if not status:
        return resolve(schema)
    for variant in schema["oneOf"]:
        if variant["properties"]["status"].get("enum") == [status]:
            return resolve(variant)
    raise AssertionError(f"{base} has no variant with status {status!r}")


@pytest.mark.parametrize("name", sorted(wire.SCHEMAS))
def test_each_typed_dict_is_its_schema(name: str) -> None:
    cls = wire.SCHEMAS[name]
    schema = schema_of(name)
    declared = set(cls.__required_keys__) | set(cls.__optional_keys__)  # type: ignore[attr-defined]
    assert declared == set(schema["properties"]), (
        f"{name}: only here {declared - set(schema['properties'])}; only in the document {set(schema['properties']) - declared}"
    )
    assert set(cls.__required_keys__) == set(schema.get("required", [])), name  # type: ignore[attr-defined]


def test_every_schema_the_protocol_uses_has_its_typed_dict() -> None:
    # The demo provider's and the statistics' schemas are not this client's.
    not_ours = {"ChargeCount", "ChargeList", "ChargeRequest", "ChargeResponse", "ListedCharge", "KeyResponse",
                "IntentRequest", "ProblemDoc", "ReconcileOutcome", "SettledResponse"}
    covered = {n.partition("/")[0] for n in wire.SCHEMAS}
    # An enum is a Literal, checked below, not a TypedDict.
    enums = {n for n, s in SCHEMAS.items() if "enum" in s}
    assert set(SCHEMAS) - not_ours - enums == covered
    for union in ("BeginResponse", "EventResponse"):
        statuses = {v["properties"]["status"]["enum"][0] for v in SCHEMAS[union]["oneOf"]}
        assert {n.partition("/")[2] for n in wire.SCHEMAS if n.startswith(union + "/")} == statuses, union


def test_the_lease_default_and_maximum_are_the_documents() -> None:
    from idem_client import _protocol  # pyright: ignore[reportPrivateUsage]

    leases = [(name, s["properties"]["lease_ms"]) for name, s in SCHEMAS.items() if "lease_ms" in s.get("properties", {})]
    assert len(leases) >= 4, leases  # begin, the intent's claim, renew, the event claim
    for name, optional in leases:
        # Optional and nullable: the bounds are on its integer branch.
        lease = next(b for b in optional.get("oneOf", [optional]) if b.get("type") == "integer")
        assert (lease["default"], lease["maximum"], lease["minimum"]) == (
            _protocol.DEFAULT_LEASE_MS, _protocol.MAX_LEASE_MS, 1), name


def test_the_action_states_are_the_documents() -> None:
    from typing import get_args

    assert set(get_args(wire.ActionState)) == set(SCHEMAS["ActionState"]["enum"])
