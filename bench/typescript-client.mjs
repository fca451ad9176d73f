#!/usr/bin/env node
// A guarded charge through idem-client (TypeScript) against the same
// protocol written with raw fetch calls, in one run, interleaved so the
// machine's drift hits both alike. Each guarded effect is a charge on the
// demo provider (POST /v1/demo/charges with the derived key):
//
//   client  Idem.run: record and claim in one call, the charge, complete
//   fetch   the same three calls by hand with fetch
//
//   before  with --before DIST: Idem.run of another build of the client
//           (its dist directory), so two builds are compared in one run
//
// Prints p50 and p99 per guarded charge, the ratio of the p50s and each
// client's share (its p50 minus the p50 by hand).
//
//   npm --prefix clients/typescript run build
//   IDEM_BIN=target/release/idem node bench/typescript-client.mjs [--n 500] [--postgres URL] [--before DIST] [--effect none]
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { Idem } from "../clients/typescript/dist/esm/index.js";
import { pix, pspCharge, serve } from "../clients/typescript/test/support.mjs";

const args = process.argv.slice(2);
const n = Number(args[args.indexOf("--n") + 1] || 500) || 500;
const pg = args.includes("--postgres") ? args[args.indexOf("--postgres") + 1] : null;
// --effect none: an effect that does nothing, so only idem's part is timed
// (the fetch way then skips the charge too).
const none = args.includes("--effect") && args[args.indexOf("--effect") + 1] === "none";
const beforeDist = args.includes("--before") ? args[args.indexOf("--before") + 1] : null;
const Before = beforeDist ? (await import(pathToFileURL(path.resolve(beforeDist, "esm/index.js")).href)).Idem : null;
const server = await serve({ name: pg ? "postgres" : "sqlite", url: pg });
const token = server.newTenant("bench");
const idem = new Idem({ baseUrl: server.url, token });
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
const post = async (path, body) => {
  const res = await fetch(server.url + path, { method: "POST", headers, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
};

const before = Before ? new Before({ baseUrl: server.url, token }) : null;
const effect = none ? () => ({ ok: true }) : (intent) => pspCharge(server.url, token, intent.payload, intent.key);
const ways = {
  client: (ref) => idem.run("pix.cobranca", effect, pix(ref)),
  ...(before ? { before: (ref) => before.run("pix.cobranca", effect, pix(ref)) } : {}),
  fetch: async (ref) => {
    const doc = await post("/v1/intents", { action: "pix.cobranca", payload: pix(ref), claim: { lease_ms: 30000, attempt_id: ref } });
    if (doc.claim.status !== "claimed") throw new Error(`not claimed: ${doc.claim.status}`);
    const response = none ? { ok: true } : await pspCharge(server.url, token, doc.frozen, doc.key);
    await post(`/v1/actions/${doc.key}/complete`, { token: doc.claim.token, response });
  },
};

const names = Object.keys(ways);
const times = Object.fromEntries(names.map((w) => [w, []]));
// Per round, each client's time minus the hand-written calls' time in the
// same round: its share, with the machine's drift between rounds taken out.
const paired = {};
// The process's CPU time per effect (Node's one thread does the client's
// work and fetch's): the client's own work without the server's noise.
const cpu = Object.fromEntries(names.map((w) => [w, []]));
for (let i = 0; i < 20; i++) for (const w of names) await ways[w](`warm-${w}-${i}`);
for (let i = 0; i < n; i++) {
  // Each round in another order, so no way always follows the same one.
  const order = names.map((_, j) => names[(i + j) % names.length]);
  const round = {};
  for (const w of i % 2 ? order.reverse() : order) {
    const c = process.cpuUsage();
    const t = performance.now();
    await ways[w](`bench-${w}-${i}`);
    round[w] = performance.now() - t;
    const used = process.cpuUsage(c);
    cpu[w].push((used.user + used.system) / 1000);
    times[w].push(round[w]);
  }
  for (const w of names) if (w !== "fetch") (paired[w] ??= []).push(round[w] - round.fetch);
}
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
console.log(`${n} guarded ${none ? "effects that do nothing" : "charges"} each, ${pg ? "PostgreSQL" : "SQLite"}, ${process.version}`);
for (const w of Object.keys(times)) {
  console.log(`${w.padEnd(7)} p50 ${q(times[w], 0.5).toFixed(2)} ms  p99 ${q(times[w], 0.99).toFixed(2)} ms`);
}
console.log(`client/fetch p50 ratio ${(q(times.client, 0.5) / q(times.fetch, 0.5)).toFixed(2)}`);
for (const w of names.filter((w) => w !== "fetch")) {
  console.log(`${w} CPU per effect: median ${q(cpu[w], 0.5).toFixed(3)} ms, ${(q(cpu[w], 0.5) - q(cpu.fetch, 0.5)).toFixed(3)} ms over fetch`);
  console.log(`${w} share: p50 minus fetch p50 ${(q(times[w], 0.5) - q(times.fetch, 0.5)).toFixed(3)} ms, median of the rounds' differences ${q(paired[w], 0.5).toFixed(3)} ms`);
}
await server.stop();
