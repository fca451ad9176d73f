// A charge guarded by `once`: run it as often as a queue would.
// ANCHOR: once
import { Failed, Idem, minorUnits, type Intent } from "idem-client";

const URL = process.env.IDEM_URL!;
const TOKEN = process.env.IDEM_TOKEN!;
const idem = new Idem({ baseUrl: URL, token: TOKEN });

/** The provider's call: the demo provider stands in for a PSP. */
async function psp(intent: Intent, signal: AbortSignal): Promise<{ id: string; amount_cents: number }> {
  // intent.payload is the candidate as its FIRST delivery sent it.
  // Exact cents from the amount's decimal text: a Number cannot hold money
  // exactly, and minorUnits refuses an amount with more than two places.
  const cents = Number(minorUnits(intent.decimal("valor")!, 2));
  const res = await fetch(URL + "/v1/demo/charges", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": intent.key, "content-type": "application/json" },
    body: JSON.stringify({ amount_cents: cents, currency: "BRL", customer: intent.payload.cliente_id }),
    signal, // aborted before the claim's lease could be lost
  });
  if (res.status === 422) {
    // The provider refused: it did not act, and never will for this payload.
    throw new Failed(await res.text(), { retryable: false });
  }
  if (!res.ok) throw new Error(`the provider answered ${res.status}`);
  return res.json() as Promise<{ id: string; amount_cents: number }>;
}

const charge = idem.once("pix.cobranca", (intent, { signal }) => psp(intent, signal), {
  leaseMs: 30_000,
  onInFlight: "wait",
});

const message = { cliente_id: "c-1", valor: "180.00", chave_pix_destino: "fulano@example.com", referencia_intencao: "FAT-1" };
const first = await charge(message);
const again = await charge(message); // a redelivery: nothing runs
if (first.replayed || !again.replayed || again.response.id !== first.response.id) throw new Error("not once");
console.log(first.response.id, "charged", first.response.amount_cents, "cents; replayed:", again.replayed);
// ANCHOR_END: once
