#!/usr/bin/env python3
"""Another tenant's write latency under each attack of issue 63, from outside.

    python3 bench/fairness.py PORT NOISY_TOKEN OTHER_TOKEN [WRITES 40]

For each attack in turn (none, 300 stalled tokenless uploads from four
loopback addresses, 256 claims waiting with wait_ms from one tenant, 4
HTTP/2 connections x 64 waiting streams, 300 waits whose clients left a
second ago), the other tenant sends WRITES plain `POST /v1/intents` one
after another (time-out 30 s) and the script prints p50, p99, the worst,
how many were not 201, and what an unauthenticated `/readyz` said. Only
the standard library and curl (for HTTP/2)."""
import http.client, json, random, socket, statistics, subprocess, sys, threading, time

port = int(sys.argv[1]); noisy = sys.argv[2]; other = sys.argv[3]
writes = int(sys.argv[4]) if len(sys.argv) > 4 else 40
run = f"{random.randrange(1 << 30):x}"


def post(path, body, token, timeout=30.0, source="127.0.0.1"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        c.request("POST", path, json.dumps(body), {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        r = c.getresponse(); data = r.read()
        return r.status, data
    finally:
        c.close()


def intent(ref, claim=None):
    b = {"action": "pix.cobranca", "payload": {"cliente_id": "c-1", "valor": "1.00", "chave_pix_destino": "x@example.com",
                                                 "referencia_intencao": ref}}
    if claim: b["claim"] = claim
    return b


def measure(tag):
    times, bad = [], 0
    for i in range(writes):
        t0 = time.time()
        try:
            st, _ = post("/v1/intents", intent(f"FAIR-{run}-{tag}-{i}"), other)
            if st != 201: bad += 1
        except Exception:
            bad += 1
        times.append(time.time() - t0)
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/readyz"); r = c.getresponse(); ready = f"{r.status} {r.read().decode()[:40]}"
    except Exception as e:
        ready = f"error {e}"
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"{tag:<16} {statistics.median(times) * 1000:9.1f} {p(0.99) * 1000:9.1f} {times[-1] * 1000:9.1f} {bad:5d}   {ready}", flush=True)


def held_key(tag):
    st, data = post("/v1/intents", intent(f"HELD-{run}-{tag}", {"lease_ms": 120000}), noisy)
    return json.loads(data)["key"]


print(f"{'attack':<16} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9} {'not201':>5}   readyz", flush=True)
measure("none")

# 300 stalled tokenless uploads of a saved scenario, from 127.0.0.2-5.
socks = []
for i in range(300):
    s = socket.create_connection(("127.0.0.1", port), source_address=(f"127.0.0.{2 + i % 4}", 0))
    s.sendall(f"POST /s HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
              f"Content-Length: 100000\r\n\r\nname=slow-{i}&".encode())
    socks.append(s)
time.sleep(0.5)
measure("slow-uploads")
for s in socks: s.close()
time.sleep(1)

def waits(key, n, timeout, first_addr):
    """n claims of the noisy tenant waiting on `key` (wait_ms 20000), each
    given up after `timeout` s, from four loopback addresses; started."""
    def wait(src):
        try:
            post(f"/v1/actions/{key}/begin", {"action": "pix.cobranca", "wait_ms": 20000}, noisy, timeout=timeout, source=src)
        except Exception:
            pass
    ts = [threading.Thread(target=wait, args=(f"127.0.0.{first_addr + i % 4}",), daemon=True) for i in range(n)]
    [t.start() for t in ts]
    return ts

# 256 claims waiting on one held action, one tenant.
ts = waits(held_key("wait"), 256, 25, 6)
time.sleep(0.5)
measure("waiters")
[t.join() for t in ts]

# 4 HTTP/2 connections x 64 streams, each a waiting claim.
key = held_key("h2")
url = f"http://127.0.0.1:{port}/v1/actions/{key}/begin"
procs = []
for c in range(4):
    # curl's options are global: one body and its headers, 64 addresses.
    args = ["curl", "-s", "--no-progress-meter", "--http2-prior-knowledge", "--parallel", "--parallel-max", "64",
            "--interface", f"127.0.0.{10 + c}", "-X", "POST", "-H", f"authorization: Bearer {noisy}",
            "-H", "content-type: application/json", "--data", '{"action":"pix.cobranca","wait_ms":20000}']
    for _ in range(64):
        args += ["-o", "/dev/null", url]
    procs.append(subprocess.Popen(args))
time.sleep(1)
measure("h2-streams")
for p in procs: p.kill(); p.wait()
time.sleep(1)

# 300 waits whose clients leave after 100 ms; measured one second later.
[t.join() for t in waits(held_key("dropped"), 300, 0.1, 14)]
time.sleep(1)
measure("dropped-waits")
