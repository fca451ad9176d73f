#!/usr/bin/env bash
# A worker's charge, guarded by idem: run it as often as the queue
# redelivers, and the customer is charged once. Needs IDEM_URL (default
# http://127.0.0.1:3000), TOKEN (from `idem tenant create`), curl, python3,
# and `idem serve --demo` for the demo payment provider.
set -euo pipefail
url=${IDEM_URL:-http://127.0.0.1:3000}
api() {  # POST a JSON body to /v1/$1, with the tenant's token
  curl -sS "$url/v1/$1" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' "${@:3}" -d "$2"
}
field() { python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)[sys.argv[1]]).strip("\""))' "$1"; }

# 1. Record the intent before acting. A redelivery gets the payload frozen
#    by the first delivery, and the key derived from it.
key=$(api intents '{"action": "pix.cobranca", "payload": {"cliente_id": "c-1",
  "valor": "180.00", "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}}' | field key)

# 2. Claim the side effect under that key: one claim at a time, fenced.
begin=$(api "actions/$key/begin" '{"action": "pix.cobranca"}')
case $(field status <<<"$begin") in
  claimed)
    # 3. Charge with the key as the provider's idempotency key, then
    #    record the outcome under the claim's fencing token.
    charge=$(api demo/charges '{"amount_cents": 18000, "currency": "BRL", "customer": "c-1"}' \
      -H "idempotency-key: $key")
    api "actions/$key/complete" "{\"token\": $(field token <<<"$begin"), \"response\": $charge}" >/dev/null
    echo "charged: $charge" ;;
  completed) echo "already charged: $(field response <<<"$begin")" ;;
  *) echo "not now: $begin" ;;  # in flight elsewhere, or uncertain: see /live
esac
