// A worker process the kill scenarios run: one guarded charge. IDEM_KILL=
// before|after SIGKILLs the process inside the effect, before or after the
// PSP charged.
import { Idem } from "idem-client";
import { pix, pspCharge } from "./support.mjs";

const { IDEM_URL: url, IDEM_TOKEN: token, IDEM_REF: ref, IDEM_KILL: kill } = process.env;
const idem = new Idem({ baseUrl: url, token });
const charge = idem.once(
  "pix.cobranca",
  async (intent) => {
    if (kill === "before") process.kill(process.pid, "SIGKILL");
    const out = await pspCharge(url, token, intent.payload, intent.key);
    if (kill === "after") process.kill(process.pid, "SIGKILL");
    return out;
  },
  { leaseMs: 1000 },
);
await charge(pix(ref));
console.log(JSON.stringify({ ok: true }));
