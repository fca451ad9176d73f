// The conformance scenarios (clients/conformance/scenarios.json), run by
// this client against a real idem serve on every backend. The same file is
// run by the Python client's tests.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import * as idemClient from "idem-client";
import { backends, faultProxy, ledger, pix, pspCharge, serve } from "./support.mjs";

const { Idem, Failed } = idemClient;
const SCENARIOS = JSON.parse(readFileSync(new URL("../../conformance/scenarios.json", import.meta.url), "utf8"));
const SCHEMA = JSON.parse(readFileSync(new URL("../../conformance/scenarios.schema.json", import.meta.url), "utf8"));
/** The step members, as the schema names them: the one list both runners read. */
const KNOWN = new Set(Object.keys(SCHEMA.$defs.step.properties));
/** What this runner implements; it must be exactly the schema's members. */
const HANDLED = new Set([
  "run", "lazy", "wrong_reference", "reconcile", "effect", "lease_ms", "on_in_flight", "max_retries", "via_proxy",
  "token", "action", "expect", "expect_error", "after_ms", "concurrent", "expect_replayed",
  "parallel", "worker", "proxy", "executions", "model_calls", "ledger_cents",
]);

test("this client's problem table is exactly the server's OpenAPI document's list", () => {
  const doc = JSON.parse(readFileSync(new URL("../../conformance/openapi.json", import.meta.url), "utf8"));
  const listed = doc.components.schemas.ProblemDoc.properties.type.enum;
  assert.deepEqual([...idemClient.PROBLEM_TYPES].sort(), [...listed].sort());
});

const OPENAPI = JSON.parse(readFileSync(new URL("../../conformance/openapi.json", import.meta.url), "utf8"));

test("each problem type raises the class the OpenAPI document's table names", () => {
  const table = OPENAPI.components.schemas.ProblemDoc["x-idem-problems"];
  const CLASSES = {
    unauthorized: idemClient.Unauthorized,
    tenant_disabled: idemClient.TenantDisabled,
    in_flight: idemClient.InFlight,
    stale_token: idemClient.StaleToken,
    unprocessable: idemClient.Unprocessable,
    outcome_too_large: idemClient.OutcomeTooLarge,
    retry: idemClient.Unavailable,
    defect: idemClient.ProblemError,
  };
  assert.deepEqual(Object.keys(table).sort(), [...idemClient.PROBLEM_TYPES].sort());
  for (const [urn, row] of Object.entries(table)) {
    assert.ok(row.class in CLASSES, `${urn}: class ${row.class} is none this client knows`);
    const e = idemClient.problemFrom(400, { type: urn, title: "t" }, 0);
    assert.equal(e.constructor, CLASSES[row.class], urn);
  }
  // The members this client reads are the ones the document declares.
  assert.ok(table["urn:idem:problem:outcome-too-large"].members.includes("marked_uncertain"));
  const e = idemClient.problemFrom(413, { type: "urn:idem:problem:outcome-too-large", title: "t", marked_uncertain: true }, 0);
  assert.equal(e.markedUncertain, true);
});
/** Each expectation a step may state, and the answer members it is read from. */
const EXPECTED = new Map(
  Object.entries(SCHEMA.$defs.step.properties.expect.properties).map(([name, spec]) => [name, spec["x-wire"] ?? []]),
);

/** Whether `Schema.member` or `Schema[status].member` is in the document. */
function wireMember(ref) {
  const m = /^(\w+)(?:\[(\w+)\])?\.(\w+)$/.exec(ref);
  assert.ok(m, `not Schema.member or Schema[status].member: ${ref}`);
  const [, name, status, member] = m;
  const schemas = OPENAPI.components.schemas;
  const members = (s) =>
    s.$ref
      ? members(schemas[s.$ref.split("/").pop()])
      : new Set([...Object.keys(s.properties ?? {}), ...(s.allOf ?? []).flatMap((p) => [...members(p)])]);
  const schema = schemas[name] ?? {};
  if (status === undefined) return members(schema).has(member);
  const variants = (schema.oneOf ?? []).filter((v) => JSON.stringify(v.properties?.status?.enum) === JSON.stringify([status]));
  return variants.length === 1 && members(variants[0]).has(member);
}

test("every expectation is read from a member the OpenAPI document declares", () => {
  for (const [name, refs] of EXPECTED) {
    assert.ok(refs.length > 0, `expect.${name} names no answer member (x-wire)`);
    assert.deepEqual(refs.filter((r) => !wireMember(r)), [], `expect.${name} reads members the document lacks`);
  }
  // The check can fail: a renamed or made-up member is not found.
  assert.ok(!wireMember("BeginResponse[completed].reconciled_by"));
  assert.ok(!wireMember("BeginResponse[claimed].reconciled"));
  assert.ok(!wireMember("IntentResponse.divergence"));
});

test("the lease default and maximum are the OpenAPI document's", () => {
  const leases = Object.entries(OPENAPI.components.schemas).filter(([, s]) => s.properties?.lease_ms);
  assert.ok(leases.length >= 4);
  for (const [name, s] of leases) {
    // Optional and nullable: the bounds are on its integer branch.
    const l = (s.properties.lease_ms.oneOf ?? [s.properties.lease_ms]).find((b) => b.type === "integer");
    assert.deepEqual([l.default, l.maximum, l.minimum], [idemClient.DEFAULT_LEASE_MS, idemClient.MAX_LEASE_MS, 1], name);
  }
});

test("this runner handles every step member the schema names", () => {
  assert.deepEqual([...HANDLED].sort(), [...KNOWN].sort());
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const run = promisify(execFile);

class EffectError extends Error {}

/** One scenario's world: its tenant, reference, proxy and counters. */
class World {
  constructor(server, token) {
    this.server = server;
    this.token = token;
    this.reference = `conf-${Math.random().toString(16).slice(2, 14)}`;
    this.executions = 0;
    this.modelCalls = 0;
    this.proxy = null;
  }

  effect(spec = "charge") {
    const [kind, arg] = spec.split(":");
    const ms = Number(arg ?? 0);
    return async (intent) => {
      this.executions += 1;
      switch (kind) {
        case "charge":
          return pspCharge(this.server.url, this.token, intent.payload, intent.key);
        case "slow_charge":
          await sleep(ms);
          return pspCharge(this.server.url, this.token, intent.payload, intent.key);
        case "slow":
          await sleep(ms);
          return "late";
        case "fail_final":
          throw new Failed("declined by the provider");
        case "throw":
          throw new EffectError("the effect's own error");
        default:
          throw new Error(`a step names an effect this runner does not know: ${spec}`);
      }
    };
  }

  async call(step) {
    for (const k of Object.keys(step)) assert.ok(KNOWN.has(k), `a step names an option the schema does not: ${k}`);
    if (step.after_ms) await sleep(step.after_ms);
    const idem = new Idem({
      baseUrl: step.via_proxy ? this.proxy.url : this.server.url,
      token: step.token ?? this.token,
      maxRetries: step.max_retries ?? 2,
    });
    const reconcile = {
      resend: (intent) => pspCharge(this.server.url, this.token, intent.payload, intent.key),
      never: () => undefined,
    }[step.reconcile];
    if (step.reconcile) assert.ok(reconcile, `unknown reconcile ${step.reconcile}`);
    const payload = pix(this.reference, step.run.valor);
    const candidate = step.lazy
      ? () => {
          this.modelCalls += 1;
          return payload;
        }
      : payload;
    const options = {
      leaseMs: step.lease_ms ?? 30_000,
      onInFlight: step.on_in_flight ?? "wait",
      reconcile,
      // A reference that is not the payload's (the catalog reads
      // referencia_intencao): the client must refuse it.
      reference: this.reference + (step.wrong_reference ? "-elsewhere" : ""),
    };
    return idem.run(step.action ?? "pix.cobranca", this.effect(step.effect), candidate, options);
  }

  async check(step, promise) {
    if (step.expect_error) {
      await assert.rejects(promise, (e) => {
        const name = step.expect_error === "EffectError" ? EffectError : idemClient[step.expect_error];
        assert.ok(name, `unknown error class ${step.expect_error}`);
        assert.ok(e instanceof name, `expected ${step.expect_error}, got ${e?.constructor?.name}: ${e?.message}`);
        return true;
      });
      return;
    }
    const out = await promise;
    for (const [k, v] of Object.entries(step.expect ?? {})) {
      assert.ok(EXPECTED.get(k)?.length, `expect.${k} is read from no member the document declares`);
      const got = k === "diverged" ? out.intent.diverged : out[k];
      assert.equal(got, v, `${k}`);
    }
    return out;
  }

  async step(step) {
    if (step.run && step.concurrent) {
      const outs = await Promise.all(Array.from({ length: step.concurrent }, () => this.call(step)));
      assert.equal(outs.filter((o) => o.replayed).length, step.expect_replayed, "replayed calls");
      return;
    }
    if (step.run) return this.check(step, this.call(step));
    if (step.parallel) {
      await Promise.all(step.parallel.map((s) => this.check(s, this.call(s))));
      return;
    }
    if (step.worker) {
      const worker = new URL("./worker.mjs", import.meta.url).pathname;
      const env = { ...process.env, IDEM_URL: this.server.url, IDEM_TOKEN: this.token, IDEM_REF: this.reference, IDEM_KILL: step.worker.kill };
      await assert.rejects(run(process.execPath, [worker], { env }), (e) => e.signal === "SIGKILL");
      return;
    }
    if (step.proxy) {
      this.proxy ??= await faultProxy(this.server.url);
      this.proxy.add(step.proxy);
      return;
    }
    if ("executions" in step || "model_calls" in step || "ledger_cents" in step) {
      if ("executions" in step) assert.equal(this.executions, step.executions, "executions of the effect");
      if ("model_calls" in step) assert.equal(this.modelCalls, step.model_calls, "model calls");
      if ("ledger_cents" in step) assert.deepEqual(await ledger(this.server.url, this.token), step.ledger_cents, "the PSP's ledger");
      return;
    }
    assert.fail(`a step this runner does not know: ${JSON.stringify(step)}`);
  }
}

for (const backend of backends()) {
  describe(`conformance on ${backend.name}`, () => {
    let server;
    before(async () => {
      server = await serve(backend);
    });
    after(async () => {
      await server?.stop();
    });
    for (const scenario of SCENARIOS.scenarios) {
      test(scenario.name, async () => {
        const world = new World(server, server.newTenant(`ts${Math.random().toString(16).slice(2, 12)}`));
        try {
          for (const step of scenario.steps) await world.step(step);
        } finally {
          await world.proxy?.close();
        }
      });
    }
  });
}
