// A queue consumer: the event claim saves work, the action's key keeps the charge single.
// ANCHOR: events
import { Idem } from "idem-client";

const idem = new Idem({ baseUrl: process.env.IDEM_URL!, token: process.env.IDEM_TOKEN! });
const handled: string[] = [];

async function onMessage(msg: { id: string; body: string }) {
  await using ev = await idem.events.claim("rabbitmq", msg.id, { leaseMs: 30_000 });
  if (ev.duplicate) return "ack"; // handled before: acknowledge, do nothing
  handled.push(msg.id); // ... the guarded effect goes here ...
  await ev.complete(); // not completed by the end of the block: released
  return "ack";
}

await onMessage({ id: "m-1", body: "hello" });
await onMessage({ id: "m-1", body: "hello" }); // redelivered
console.log("handled:", handled.join(","));
// ANCHOR_END: events
