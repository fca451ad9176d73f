#!/usr/bin/env python3
"""Clients that give up, from outside: 16 threads send POST /v1/intents with a claim
for SECONDS, each with a client time-out drawn from LO to HI seconds, then after a
3 s pause 5 plain intents (each must answer 2xx within 2 s) and /readyz.

    python3 bench/clients-give-up.py PORT TOKEN [SECONDS 15] [LO 0.002] [HI 0.010] [claim|plain]

Prints the counts, each plain write's status and time, readiness, and FAILS N."""
import http.client, json, random, sys, threading, time
port = int(sys.argv[1]); token = sys.argv[2]
secs = float(sys.argv[3]) if len(sys.argv) > 3 else 15.0
lo = float(sys.argv[4]) if len(sys.argv) > 4 else 0.002
hi = float(sys.argv[5]) if len(sys.argv) > 5 else 0.010
claim = sys.argv[6] == "claim" if len(sys.argv) > 6 else True
stop = time.time() + secs
counts = {"ok": 0, "timeout": 0, "other": 0}
lock = threading.Lock()
def body(ref):
    b = {"action": "pix.cobranca", "payload": {"cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "fulano@example.com", "referencia_intencao": ref}}
    if claim: b["claim"] = {"lease_ms": 30000}
    return json.dumps(b)
def worker(w):
    n = 0
    while time.time() < stop:
        n += 1
        t = random.uniform(lo, hi)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=t)
            c.request("POST", "/v1/intents", body(f"H-{w}-{n}-{random.random()}"), {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            r = c.getresponse(); r.read(); c.close()
            k = "ok" if r.status < 300 else "other"
        except Exception:
            k = "timeout"
        with lock: counts[k] += 1
ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
[t.start() for t in ts]; [t.join() for t in ts]
print("hammer:", counts)
time.sleep(3)
fails = 0
for i in range(5):
    t0 = time.time()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/v1/intents", json.dumps({"action": "pix.cobranca", "payload": {"cliente_id": "c-1", "valor": "1.00", "chave_pix_destino": "x@example.com", "referencia_intencao": f"PLAIN-{i}-{random.random()}"}}), {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        el = time.time() - t0
        print("plain", i, r.status, f"{el:.2f}s")
        if r.status >= 300 or el > 2: fails += 1
    except Exception as e:
        print("plain", i, "error", e); fails += 1
c = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
c.request("GET", "/readyz"); r = c.getresponse(); print("readyz", r.status, r.read().decode())
print("FAILS", fails)
sys.exit(1 if fails else 0)
