#!/usr/bin/env node
// A guarded charge through idem-client (TypeScript) against the same
// protocol written with raw fetch calls, in one run, interleaved so the
// machine's drift hits both alike. Each guarded effect is a charge on the
// demo provider (POST /v1/demo/charges with the derived key):
//
//   client  Idem.run: record and claim in one call, the charge, complete
//   fetch   the same three calls by hand with fetch
//
// Prints p50 and p99 per guarded charge and the ratio of the p50s.
//
//   npm --prefix clients/typescript run build
//   IDEM_BIN=target/release/idem node bench/typescript-client.mjs [--n 500] [--postgres URL]
import { performance } from "node:perf_hooks";
import { Idem } from "../clients/typescript/dist/esm/index.js";
import { pix, pspCharge, serve } from "../clients/typescript/test/support.mjs";

const args = process.argv.slice(2);
const n = Number(args[args.indexOf("--n") + 1] || 500) || 500;
const pg = args.includes("--postgres") ? args[args.indexOf("--postgres") + 1] : null;
const server = await serve({ name: pg ? "postgres" : "sqlite", url: pg });
const token = server.newTenant("bench");
const idem = new Idem({ baseUrl: server.url, token });
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
const post = async (path, body) => {
  const res = await fetch(server.url + path, { method: "POST", headers, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
};

const ways = {
  client: (ref) => idem.run("pix.cobranca", (intent) => pspCharge(server.url, token, intent.payload, intent.key), pix(ref)),
  fetch: async (ref) => {
    const doc = await post("/v1/intents", { action: "pix.cobranca", payload: pix(ref), claim: { lease_ms: 30000, attempt_id: ref } });
    if (doc.claim.status !== "claimed") throw new Error(`not claimed: ${doc.claim.status}`);
    const response = await pspCharge(server.url, token, doc.frozen, doc.key);
    await post(`/v1/actions/${doc.key}/complete`, { token: doc.claim.token, response });
  },
};

const times = { client: [], fetch: [] };
for (let i = 0; i < 20; i++) for (const w of Object.keys(ways)) await ways[w](`warm-${w}-${i}`);
for (let i = 0; i < n; i++) {
  for (const w of i % 2 ? ["client", "fetch"] : ["fetch", "client"]) {
    const t = performance.now();
    await ways[w](`bench-${w}-${i}`);
    times[w].push(performance.now() - t);
  }
}
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
console.log(`${n} guarded charges each, ${pg ? "PostgreSQL" : "SQLite"}, ${process.version}`);
for (const w of Object.keys(times)) {
  console.log(`${w.padEnd(7)} p50 ${q(times[w], 0.5).toFixed(2)} ms  p99 ${q(times[w], 0.99).toFixed(2)} ms`);
}
console.log(`client/fetch p50 ratio ${(q(times.client, 0.5) / q(times.fetch, 0.5)).toFixed(2)}`);
await server.stop();
