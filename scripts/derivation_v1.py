#!/usr/bin/env python3
"""The rules-v1 key derivation as the manual documents it, in plain Python,
checked against every vector file idem's core checks.

Usage:
  scripts/derivation_v1.py check FIXTURE...   every case's key matches
  scripts/derivation_v1.py symbols            writes the enclosed-letter
                                              vectors (stdout)

Written from docs/book/src/key-derivation.md's table, apart from the Rust
code, so the two meet only in the vectors: a drift on either side fails.
"""

import hashlib
import hmac
import json
import sys
import unicodedata
from decimal import Decimal

FIELDS = {
    "pix.cobranca": {
        "cliente_id": "raw_text",
        "valor": "money_cents",
        "chave_pix_destino": "pix_key",
        "referencia_intencao": "trim",
    },
    "email.cobranca": {
        "cliente_id": "raw_text",
        "referencia_intencao": "trim",
        "template": "trim_lower",
    },
}


def rule(name, value):
    if name == "raw_text":
        return str(value)
    if name == "trim":
        return str(value).strip()
    if name == "trim_lower":
        return str(value).strip().lower()
    if name == "money_cents":
        cents = Decimal(str(value)) * 100
        if cents != cents.to_integral_value() or cents < 0:
            raise ValueError(f"not whole cents: {value!r}")
        return str(int(cents))
    if name == "pix_key":
        text = unicodedata.normalize("NFC", str(value)).strip().lower()
        if "@" in text:
            return text
        return "".join(ch for ch in text if ch.isalnum())
    raise ValueError(f"no rule {name}")


def derive(secret, tenant, action, payload, superseding=None):
    """`superseding`: the revision at which the intent superseded a failed
    one (2 or more), written as "s"; absent for every other intent."""
    fields = FIELDS[action]
    body = {"t": tenant, "a": action, "v": 1,
            "p": {f: rule(r, payload[f]) for f, r in fields.items()}}
    if superseding is not None:
        body["s"] = str(superseding)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(secret.encode(), text.encode(), hashlib.sha256).hexdigest()


def check(paths):
    total = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            # Numbers keep their text: Decimal, never a float.
            doc = json.load(f, parse_float=Decimal)
        assert doc["rules_version"] == 1, path
        for i, case in enumerate(doc["cases"]):
            got = derive(doc["secret"], case["tenant"], case["action"], case["payload"])
            if got != case["expected_key"]:
                sys.exit(f"{path} case {i}: {got} != {case['expected_key']} ({case['payload']})")
            total += 1
    print(f"derivation_v1.py: {total} cases match in {len(paths)} files")


def symbols():
    """One case per enclosed Latin letter, which Python's isalnum drops,
    inside an otherwise ordinary phone key; plus an e-mail key, which keeps
    it."""
    secret = "vetor-publico-nao-e-segredo"
    letters = [chr(c) for lo, hi in ((0x24B6, 0x24E9), (0x1F130, 0x1F149),
                                     (0x1F150, 0x1F169), (0x1F170, 0x1F189))
               for c in range(lo, hi + 1)]
    cases = []
    for i, ch in enumerate(letters):
        key = f"+55 11 9{ch}{i:04d}-{ch}1234" if i % 2 else f" {ch}{ch}131.144.024-26"
        payload = {"cliente_id": f"c-{i}", "valor": "10.50",
                   "chave_pix_destino": key, "referencia_intencao": f"SYM-{i}"}
        cases.append({"tenant": "loja-simbolos", "action": "pix.cobranca",
                      "payload": payload,
                      "expected_key": derive(secret, "loja-simbolos", "pix.cobranca", payload)})
    payload = {"cliente_id": "c-mail", "valor": "1", "chave_pix_destino": "Ⓐna@Example.com",
               "referencia_intencao": "SYM-MAIL"}
    cases.append({"tenant": "loja-simbolos", "action": "pix.cobranca", "payload": payload,
                  "expected_key": derive(secret, "loja-simbolos", "pix.cobranca", payload)})
    doc = {"secret": secret, "rules_version": 1,
           "note": "rules v1 on the 130 enclosed Latin letters (Python's isalnum drops them); "
                   "written by scripts/derivation_v1.py symbols",
           "cases": cases}
    json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["check"] and len(sys.argv) > 2:
        check(sys.argv[2:])
    elif sys.argv[1:] == ["symbols"]:
        symbols()
    else:
        sys.exit(__doc__)
