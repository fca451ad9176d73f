// The in-process agent-framework integrations through the frameworks'
// own loops, with their own fake models, against a real idem server on
// SQLite and (with IDEM_TEST_POSTGRES_URL) PostgreSQL: LangChain JS's
// createAgent with its toolRetryMiddleware and fake chat model
// (idem-client/langchain), and the AI SDK's generateText with its mock
// language model (idem-client/ai-sdk). The demo provider's ledger is the
// oracle: what it recorded is what a customer was charged.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { generateText, stepCountIs, tool as aiTool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Idem } from "idem-client";
import { GuardFileError as AiGuardFileError, idemGuards, idemTool, IdemToolError } from "idem-client/ai-sdk";
import { GuardFileError, OutcomeUnknown, idemMiddleware } from "idem-client/langchain";
import { createAgent, tool as lcTool, toolRetryMiddleware } from "langchain";
import { z } from "zod";
import { Scripted } from "./lc_support.mjs";
import { backends, ledger, serve } from "./support.mjs";

const SCHEMA = JSON.parse(readFileSync(new URL("../../conformance/mcp-meta.schema.json", import.meta.url), "utf8"));
const GUARD = {
  tool: "charge_pix",
  action: "pix.cobranca",
  key_argument: "idempotency_key",
  lease_ms: 3000,
  on_uncertain: "resend",
  fields: { cliente_id: "customer_id", valor: "amount", chave_pix_destino: "pix_key", referencia_intencao: "invoice_ref" },
};
const ref = (name) => `${name}-${Math.random().toString(16).slice(2, 12)}`;

/** The members `_meta.idem` may hold, as the gateway's schema says. */
function checkMeta(meta) {
  for (const k of SCHEMA.required) assert.ok(Object.hasOwn(meta, k), `_meta.idem lacks ${k}`);
  for (const k of Object.keys(meta)) assert.ok(Object.hasOwn(SCHEMA.properties, k), `_meta.idem has ${k}, which the schema does not`);
  return meta;
}

/** The payment tool's body: the demo provider, with idem's key or (when
 *  unguarded) a key minted in the attempt; faults on demand. */
function psp(server, token, { failFirst = false, sleepMs = 0 } = {}) {
  const p = {
    calls: 0,
    keys: [],
    async charge({ customer_id, amount, invoice_ref, idempotency_key }) {
      p.calls += 1;
      const n = p.calls;
      const key = idempotency_key || crypto.randomUUID();
      p.keys.push(key);
      const r = await fetch(`${server.url}/v1/demo/charges`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "idempotency-key": key, "content-type": "application/json" },
        body: JSON.stringify({ amount_cents: Math.round(Number(amount) * 100), currency: "BRL", customer: customer_id }),
      });
      assert.ok(r.ok, await r.clone().text());
      const body = await r.json();
      if (sleepMs) await new Promise((res) => setTimeout(res, sleepMs));
      if (failFirst && n === 1) throw new Error("the PSP did not answer within 10 s");
      return `charged ${body.amount_cents} cents, charge ${body.id}, invoice ${invoice_ref}`;
    },
  };
  return p;
}

const ARGS = z.object({ customer_id: z.string(), amount: z.string(), pix_key: z.string(), invoice_ref: z.string(), idempotency_key: z.string().optional() });
const args = (reference, amount = "180.00") => ({ customer_id: "c-1", amount, pix_key: "fulano@example.com", invoice_ref: reference });

for (const backend of backends()) {
  describe(`LangChain JS (${backend.name})`, () => {
    let server;
    before(async () => {
      server = await serve(backend);
    });
    after(async () => {
      await server?.stop();
    });

    const lcPsp = (token, opts) => {
      const p = psp(server, token, opts);
      p.tool = lcTool(async (input) => p.charge(input), { name: "charge_pix", description: "Charges a Pix payment.", schema: ARGS });
      return p;
    };
    const model = (...calls) => new Scripted(calls);
    const toolMessages = (out) => out.messages.filter((m) => ToolMessage.isInstance(m));

    test("without idem, the retry middleware charges twice", async () => {
      const token = server.newTenant(ref("lc"));
      const p = lcPsp(token, { failFirst: true });
      const agent = createAgent({ model: model(call(ref("bare"))), tools: [p.tool], middleware: [toolRetryMiddleware({ maxRetries: 2, initialDelayMs: 10 })] });
      await agent.invoke({ messages: [new HumanMessage("pay")] });
      assert.equal((await ledger(server.url, token)).length, 2);
    });

    test("inside the retry middleware, a timeout after the charge resends under the same key", async () => {
      const token = server.newTenant(ref("lc"));
      const p = lcPsp(token, { failFirst: true });
      const idem = new Idem({ baseUrl: server.url, token });
      const agent = createAgent({
        model: model(call(ref("retry"))),
        tools: [p.tool],
        middleware: [toolRetryMiddleware({ maxRetries: 2, initialDelayMs: 10 }), idemMiddleware(idem, [GUARD], { tools: [p.tool] })],
      });
      const [m] = toolMessages(await agent.invoke({ messages: [new HumanMessage("pay")] }));
      assert.equal((await ledger(server.url, token)).length, 1);
      assert.equal(p.calls, 2);
      assert.equal(new Set(p.keys).size, 1);
      assert.equal(p.keys[0].length, 64);
      const meta = checkMeta(m.response_metadata.idem);
      assert.equal(meta.key, p.keys[0]);
      assert.equal(m.tool_call_id, "call_1");
      assert.equal(m.status, "success");
    });

    test("a divergent second extraction gets the stored result under its own id, and the sentence", async () => {
      const token = server.newTenant(ref("lc"));
      const p = lcPsp(token);
      const idem = new Idem({ baseUrl: server.url, token });
      const r = ref("diverge");
      const agent = createAgent({ model: model(call(r, "180.00", "call_1"), call(r, "1800.00", "call_2")), tools: [p.tool], middleware: [idemMiddleware(idem, [GUARD], { tools: [p.tool] })] });
      const [first, second] = toolMessages(await agent.invoke({ messages: [new HumanMessage("pay")] }));
      assert.equal(p.calls, 1);
      assert.deepEqual(await ledger(server.url, token), [18000]);
      assert.deepEqual([first.tool_call_id, second.tool_call_id], ["call_1", "call_2"]);
      assert.equal(checkMeta(second.response_metadata.idem).replayed, true);
      assert.equal(second.response_metadata.idem.diverged, true);
      assert.ok(String(second.content).startsWith(String(first.content)));
      assert.match(String(second.content), /the amount you sent, 1800\.00, differs from the frozen intent's 180\.00/);
      assert.match(String(second.content), new RegExp(`charge_pix was already executed for ${r} at `));
    });

    test("8 concurrent runs of the same conversation charge once", async () => {
      const token = server.newTenant(ref("lc"));
      const p = lcPsp(token, { sleepMs: 200 });
      const idem = new Idem({ baseUrl: server.url, token });
      const r = ref("eight");
      const runs = Array.from({ length: 8 }, async (_, i) => {
        const agent = createAgent({ model: model(call(r, "180.00", `call_${i}`)), tools: [p.tool], middleware: [idemMiddleware(idem, [GUARD], { tools: [p.tool] })] });
        const [m] = toolMessages(await agent.invoke({ messages: [new HumanMessage("pay")] }));
        return m;
      });
      const answers = await Promise.all(runs);
      assert.equal(p.calls, 1);
      assert.equal((await ledger(server.url, token)).length, 1);
      assert.deepEqual(answers.map((m) => m.response_metadata.idem.replayed).sort(), [false, ...Array(7).fill(true)]);
      assert.deepEqual(answers.map((m) => m.tool_call_id).sort(), Array.from({ length: 8 }, (_, i) => `call_${i}`).sort());
    });

    test("without retry middleware the timeout ends the run with OutcomeUnknown; with refuse, the next run runs nothing", async () => {
      const token = server.newTenant(ref("lc"));
      const p = lcPsp(token, { failFirst: true });
      const idem = new Idem({ baseUrl: server.url, token });
      const r = ref("refuse");
      const agent = () =>
        createAgent({ model: model(call(r)), tools: [p.tool], middleware: [idemMiddleware(idem, [{ ...GUARD, on_uncertain: "refuse" }], { tools: [p.tool] })] });
      await assert.rejects(agent().invoke({ messages: [new HumanMessage("pay")] }), (e) => {
        let cause = e;
        while (cause && !(cause instanceof OutcomeUnknown)) cause = cause.cause;
        assert.ok(cause instanceof OutcomeUnknown, String(e));
        assert.match(cause.message, /whether it was executed is unknown/);
        return true;
      });
      const [m] = toolMessages(await agent().invoke({ messages: [new HumanMessage("pay")] }));
      assert.equal(p.calls, 1);
      assert.equal((await ledger(server.url, token)).length, 1);
      assert.equal(m.status, "error");
      assert.match(String(m.content), new RegExp(`the outcome of an earlier charge_pix for ${r} is unknown`));
      assert.equal(checkMeta(m.response_metadata.idem).source, "idem");
    });

    test("a guard naming an argument the tool lacks is refused at start", () => {
      const p = lcPsp("t");
      const idem = new Idem({ baseUrl: "http://127.0.0.1:9", token: "t" });
      assert.throws(
        () => idemMiddleware(idem, [{ ...GUARD, fields: { ...GUARD.fields, valor: "amout" } }], { tools: [p.tool] }),
        (e) => e instanceof GuardFileError && /did you mean `amount`/.test(e.message) && e.where === "guards[0]",
      );
      assert.throws(() => idemMiddleware(idem, [{ ...GUARD, on_uncertian: "resend" }]), (e) => e instanceof GuardFileError && /did you mean `on_uncertain`/.test(e.message));
    });
  });

  describe(`the AI SDK (${backend.name})`, () => {
    let server;
    before(async () => {
      server = await serve(backend);
    });
    after(async () => {
      await server?.stop();
    });

    const run = async (tools, ...calls) => {
      const queue = [...calls];
      const model = new MockLanguageModelV4({
        doGenerate: async () => {
          const next = queue.shift();
          const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
          if (next === undefined) return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
          return { content: [{ type: "tool-call", toolCallId: next.id, toolName: "charge_pix", input: JSON.stringify(next.input) }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
        },
      });
      const out = await generateText({ model, tools, prompt: "pay", stopWhen: stepCountIs(10) });
      return out.steps.flatMap((s) => s.content.filter((c) => c.type === "tool-result" || c.type === "tool-error"));
    };

    test("without idem, the model's second call after a timeout charges twice", async () => {
      const token = server.newTenant(ref("ai"));
      const p = psp(server, token, { failFirst: true });
      const r = ref("bare");
      await run({ charge_pix: aiTool({ inputSchema: ARGS, execute: (i) => p.charge(i) }) }, { id: "a", input: args(r) }, { id: "b", input: args(r) });
      assert.equal((await ledger(server.url, token)).length, 2);
    });

    test("a timeout after the charge is a tool error the model reads; its retry resends under the same key", async () => {
      const token = server.newTenant(ref("ai"));
      const p = psp(server, token, { failFirst: true });
      const idem = new Idem({ baseUrl: server.url, token });
      const seen = {};
      const guards = idemGuards(idem, [GUARD], { onAnswer: (id, meta) => (seen[id] = meta) });
      const r = ref("timeout");
      const parts = await run({ charge_pix: idemTool(aiTool({ inputSchema: ARGS, execute: (i) => p.charge(i) }), guards.charge_pix) }, { id: "a", input: args(r) }, { id: "b", input: args(r) }, { id: "c", input: args(r, "1800.00") });
      assert.equal((await ledger(server.url, token)).length, 1);
      assert.equal(p.calls, 2);
      const [first, second, third] = parts;
      assert.equal(first.type, "tool-error");
      assert.ok(first.error instanceof OutcomeUnknown);
      assert.match(first.error.message, /whether it was executed is unknown\. Do not retry with a new reference; retrying this same call is safe/);
      assert.equal(second.type, "tool-result");
      assert.equal(second.toolCallId, "b");
      assert.equal(checkMeta(seen.b).reconciled, true);
      assert.equal((await idem.getAction(seen.b.key)).reconciled, true, "the resend is recorded as the reconciliation");
      assert.equal(checkMeta(seen.c).reconciled, true);
      assert.equal(third.toolCallId, "c");
      assert.match(third.output, /the amount you sent, 1800\.00, differs from the frozen intent's 180\.00/);
      assert.equal(checkMeta(seen.c).replayed, true);
    });

    test("8 concurrent requests of the same conversation charge once", async () => {
      const token = server.newTenant(ref("ai"));
      const p = psp(server, token, { sleepMs: 200 });
      const idem = new Idem({ baseUrl: server.url, token });
      const guards = idemGuards(idem, [GUARD]);
      const tools = { charge_pix: idemTool(aiTool({ inputSchema: ARGS, execute: (i) => p.charge(i) }), guards.charge_pix) };
      const r = ref("eight");
      const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => run(tools, { id: `c${i}`, input: args(r) })));
      assert.equal(p.calls, 1);
      assert.equal((await ledger(server.url, token)).length, 1);
      assert.equal(outs.flat().filter((c) => c.type === "tool-result" && /already executed/.test(c.output)).length, 7);
    });

    for (const said of ["executed", "not_executed", "cannot_tell"]) {
      test(`on_uncertain lookup: the provider says ${said}`, async () => {
        const token = server.newTenant(ref("ai"));
        const p = psp(server, token, { failFirst: true });
        const idem = new Idem({ baseUrl: server.url, token });
        const asked = [];
        const seen = {};
        const lookup = async (intent) => {
          asked.push(intent.key);
          if (said === "executed") return { charge_id: "found", amount_cents: 18000 };
          if (said === "not_executed") return undefined;
          throw new Error("the PSP's lookup is down");
        };
        const guards = idemGuards(idem, [{ ...GUARD, on_uncertain: "lookup" }], { lookups: { charge_pix: lookup }, onAnswer: (id, meta) => (seen[id] = meta) });
        const r = ref("lookup");
        const [, second] = await run({ charge_pix: idemTool(aiTool({ inputSchema: ARGS, execute: (i) => p.charge(i) }), guards.charge_pix) }, { id: "a", input: args(r) }, { id: "b", input: args(r) });
        assert.equal(asked.length, 1);
        assert.equal((await ledger(server.url, token)).length, 1);
        if (said === "executed") {
          assert.equal(second.type, "tool-result");
          assert.equal(JSON.parse(second.output).charge_id, "found");
          assert.equal(checkMeta(seen.b).lookup, "executed");
          assert.equal(p.calls, 1);
        } else if (said === "not_executed") {
          assert.equal(second.type, "tool-result");
          assert.equal(p.calls, 2);
          // As the gateway: run again under the same key, not a reconciliation.
          assert.equal(checkMeta(seen.b).reconciled, false);
          assert.equal(seen.b.lookup, "not_executed");
        } else {
          assert.equal(second.type, "tool-error");
          assert.match(second.error.message, /asking the provider did not tell/);
          assert.equal(checkMeta(second.error.idem).lookup, "unknown");
          assert.equal(p.calls, 1);
        }
      });
    }

    test("a guard naming an argument the tool's inputSchema lacks is refused when the tool is wrapped", () => {
      const idem = new Idem({ baseUrl: "http://127.0.0.1:9", token: "t" });
      const guards = idemGuards(idem, [{ ...GUARD, key_argument: "idem_key" }]);
      assert.throws(
        () => idemTool(aiTool({ inputSchema: ARGS, execute: async () => "ok" }), guards.charge_pix),
        (e) => e instanceof AiGuardFileError && /key_argument reads `idem_key`/.test(e.message),
      );
      assert.throws(() => idemTool(aiTool({ inputSchema: ARGS, execute: async () => "ok" }), guards.refund), /no guard for this tool/);
    });

    test("refuse: the model reads that the outcome is unknown, as an IdemToolError", async () => {
      const token = server.newTenant(ref("ai"));
      const p = psp(server, token, { failFirst: true });
      const idem = new Idem({ baseUrl: server.url, token });
      const guards = idemGuards(idem, [{ ...GUARD, on_uncertain: "refuse" }]);
      const r = ref("refuse");
      const [, second] = await run({ charge_pix: idemTool(aiTool({ inputSchema: ARGS, execute: (i) => p.charge(i) }), guards.charge_pix) }, { id: "a", input: args(r) }, { id: "b", input: args(r) });
      assert.equal(p.calls, 1);
      assert.equal(second.type, "tool-error");
      assert.ok(second.error instanceof IdemToolError);
      assert.match(second.error.message, new RegExp(`the outcome of an earlier charge_pix for ${r} is unknown`));
      assert.equal(checkMeta(second.error.idem).source, "idem");
    });
  });
}

function call(reference, amount = "180.00", id = "call_1") {
  return new AIMessage({ content: "", tool_calls: [{ name: "charge_pix", args: args(reference, amount), id, type: "tool_call" }] });
}

describe("LangGraph.js: a process killed mid-tool, the thread resumed from its checkpointer", () => {
  let server;
  before(async () => {
    server = await serve(backends()[0]);
  });
  after(async () => {
    await server?.stop();
  });
  for (const guarded of [true, false]) {
    test(guarded ? "with idem: one charge" : "without idem: the resumed run charges again", async () => {
      const { spawn } = await import("node:child_process");
      const { existsSync, mkdtempSync } = await import("node:fs");
      const { tmpdir } = await import("node:os");
      const path = await import("node:path");
      const dir = mkdtempSync(path.join(tmpdir(), "idem-lgjs-"));
      const token = server.newTenant(ref("kill"));
      const env = { ...process.env, IDEM_URL: server.url, IDEM_TOKEN: token, LC_CHECKPOINTS: path.join(dir, "checkpoints.json"), LC_MARKER: path.join(dir, "charged"), LC_REF: ref("killed"), LC_GUARDED: guarded ? "1" : "" };
      const worker = new URL("./lc_worker.mjs", import.meta.url).pathname;
      const start = spawn(process.execPath, [worker, "start"], { env, stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      start.stderr.on("data", (c) => (err += c));
      const deadline = Date.now() + 60_000;
      while (!existsSync(env.LC_MARKER)) {
        assert.equal(start.exitCode, null, `the worker exited before charging: ${err}`);
        assert.ok(Date.now() < deadline, "the worker never charged");
        await new Promise((r) => setTimeout(r, 50));
      }
      start.kill("SIGKILL");
      await new Promise((r) => start.once("exit", r));
      assert.equal((await ledger(server.url, token)).length, 1);
      const resumed = await new Promise((resolve) => {
        const p = spawn(process.execPath, [worker, "resume"], { env, stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let e = "";
        p.stdout.on("data", (c) => (out += c));
        p.stderr.on("data", (c) => (e += c));
        p.on("exit", (code) => resolve({ code, out, e }));
      });
      assert.equal(resumed.code, 0, resumed.e);
      const said = JSON.parse(resumed.out.trim().split("\n").at(-1));
      if (!guarded) {
        assert.equal((await ledger(server.url, token)).length, 2, "without idem the resumed run charged again");
        return;
      }
      assert.equal((await ledger(server.url, token)).length, 1);
      assert.equal(said.status, "success");
      assert.equal(said.tool_call_id, "call_1");
      assert.equal(said.idem.reconciled, true);
      assert.equal(said.idem.attempt, 2);
    });
  }
});

describe("the guard declarations and hostile arguments, in TypeScript", () => {
  const idem = new Idem({ baseUrl: "http://127.0.0.1:9", token: "t" });
  // (what a reader writes instead, what the error says)
  const MISTAKES = [
    [{ on_uncertian: "resend" }, /did you mean `on_uncertain`/],
    [{ on_uncertain: "retry" }, /"refuse", "resend" or "lookup"/],
    [{ lease_ms: "30s" }, /whole number of milliseconds/],
    [{ fields: { ...GUARD.fields, valor: "payload/amount" } }, /a JSON Pointer starting with `\/`/],
    [{ fields: { ...GUARD.fields, valor: "meta:/x402~1payment/accepted/amount" } }, /Guard this tool with the MCP gateway/],
    [{ key_argument: "invoice_ref" }, /overlaps field `referencia_intencao`/],
    [{ action: "pix cobranca" }, /`action` names the catalog action/],
    [{ on_uncertain: "lookup" }, /needs the function that asks the provider/],
    [{ supersede_failed: true }, /POST \/v1\/intents/],
    [{ freeze_meta: ["x402/payment"] }, /a tool run in-process has none/],
    [{ fields: { ...GUARD.fields, valor: "amout" } }, /did you mean `amount`/],
    [{ tool: "charge_pyx" }, /the agent does not have \(did you mean `charge_pix`\?\)/],
  ];
  for (const [change, says] of MISTAKES) {
    test(`refused at start: ${JSON.stringify(change).slice(0, 60)}`, () => {
      const lc = lcTool(async () => "ok", { name: "charge_pix", description: "Charges.", schema: ARGS });
      assert.throws(() => idemMiddleware(idem, [{ ...GUARD, ...change }], { tools: [lc] }), (e) => e instanceof GuardFileError && says.test(e.message) && e.where === "guards[0]");
    });
  }
  test("more than 64 guards, or none, is refused", () => {
    assert.throws(() => idemGuards(idem, Array.from({ length: 65 }, (_, i) => ({ ...GUARD, tool: `t${i}` }))), /at most 64/);
    assert.throws(() => idemGuards(idem, []), /nothing would be guarded/);
  });

  let server;
  before(async () => {
    server = await serve(backends()[0]);
  });
  after(async () => {
    await server?.stop();
  });
  let deep = "x";
  for (let i = 0; i < 80; i++) deep = { a: deep };
  const HOSTILE = [
    ["70 KiB", { note: "x".repeat(70 * 1024) }, /a guarded call takes at most 65536/],
    ["80 levels deep", { note: deep }, /nest deeper than 64 levels/],
    ["a NUL byte", { customer_id: "c-1\u0000" }, /holds a NUL character/],
  ];
  for (const [name, extra, says] of HOSTILE) {
    test(`hostile arguments (${name}): refused, nothing recorded or run, the store still writable`, async () => {
      const token = server.newTenant(ref("ai"));
      const client = new Idem({ baseUrl: server.url, token });
      let runs = 0;
      const schema = ARGS.extend({ note: z.any().optional() });
      const tools = { charge_pix: idemTool(aiTool({ inputSchema: schema, execute: async () => (runs++, "charged") }), idemGuards(client, [GUARD]).charge_pix) };
      const r = ref("hostile");
      const call = async (input) => {
        const queue = [{ id: "c", input }];
        const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
        const model = new MockLanguageModelV4({
          doGenerate: async () => {
            const next = queue.shift();
            if (!next) return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
            return { content: [{ type: "tool-call", toolCallId: next.id, toolName: "charge_pix", input: JSON.stringify(next.input) }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
          },
        });
        const out = await generateText({ model, tools, prompt: "pay", stopWhen: stepCountIs(3) });
        return out.steps.flatMap((s) => s.content.filter((c) => c.type === "tool-result" || c.type === "tool-error"))[0];
      };
      const refused = await call({ ...args(r), ...extra });
      assert.equal(refused.type, "tool-error");
      assert.match(refused.error.message, says);
      assert.equal(refused.error.idem.key, null);
      assert.equal(runs, 0);
      assert.equal(await client.getIntent("pix.cobranca", r), null, "nothing was recorded");
      const ok = await call(args(r));
      assert.equal(ok.type, "tool-result");
      assert.equal(runs, 1);
    });
  }
});
