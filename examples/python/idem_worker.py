#!/usr/bin/env python3
"""idem's reference queue consumer, in Python (standard library + pika).

For every message: claim it as an event (a copy or a redelivery of a handled
message is a duplicate: acknowledge it and skip the model), record the intent
or read the one frozen by an earlier delivery, charge with the intent's key,
complete the event, acknowledge. A worker killed anywhere in between leaves
nothing half done: the broker redelivers, the claim's lease runs out, and the
next delivery charges with the same key, which replays instead of charging
again.

It runs as a worker of `idem simulate --broker ... --strategies idem
--worker-command "python3 examples/python/idem_worker.py"`, which sets:
  IDEM_URL, IDEM_TOKEN                  idem's API and the tenant's token
  IDEM_SIM_BROKER, IDEM_SIM_QUEUE       where to consume
  IDEM_SIM_PREFETCH, IDEM_SIM_LEASE_MS  unacknowledged messages held; claim lease
  IDEM_SIM_KILL_RATE, IDEM_SIM_TIMEOUT_RATE, IDEM_SIM_DIVERGENCE_RATE
                                         the simulation's faults
The lines it prints on stdout (`emit`) and the kill points (`point`) are the
simulation's hooks, not part of the pattern: drop them when you copy it.
"""

import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request

import pika

BASE = os.environ["IDEM_URL"]
TOKEN = os.environ["IDEM_TOKEN"]
LEASE_MS = int(os.environ.get("IDEM_SIM_LEASE_MS", "30000"))
KILL_RATE = float(os.environ.get("IDEM_SIM_KILL_RATE", "0"))
TIMEOUT_RATE = float(os.environ.get("IDEM_SIM_TIMEOUT_RATE", "0"))
DIVERGENCE_RATE = float(os.environ.get("IDEM_SIM_DIVERGENCE_RATE", "0"))


def emit(**line):
    """A line for the simulator (a hook, not part of the pattern)."""
    print(json.dumps(line), flush=True)


def point(at):
    """A kill point: maybe ask the simulator to SIGKILL us here, and wait."""
    if random.random() < KILL_RATE:
        emit(ev="kill", at=at)
        time.sleep(30)
        os._exit(3)


def call(method, path, body=None, headers=None):
    """One request to idem: (status, JSON body), or (None, None) without an answer."""
    req = urllib.request.Request(
        BASE + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"null")
        except ValueError:
            return e.code, None
    except (OSError, ValueError):
        return None, None


def model(msg, redelivered):
    """The model stub: right the first time; a retry may read another amount."""
    emit(ev="model")
    amount = msg["amount_cents"]
    if (redelivered or msg.get("retry")) and random.random() < DIVERGENCE_RATE:
        amount += 100 * random.randint(1, 49)
    return amount, msg["destination"]


def intent(msg, redelivered):
    """The frozen intent (key, amount in cents, Pix key), recorded first if new."""
    status, v = call("GET", "/v1/intents/pix.cobranca/" + msg["reference"])
    if status == 404:
        amount, dest = model(msg, redelivered)
        payload = {
            "cliente_id": msg["reference"],
            "valor": "%d.%02d" % divmod(amount, 100),
            "chave_pix_destino": dest,
            "referencia_intencao": msg["reference"],
        }
        status, v = call("POST", "/v1/intents", {"action": "pix.cobranca", "payload": payload})
    if status not in (200, 201):
        return None
    frozen = v["payload"]  # the amount rule freezes money as whole cents
    return v["key"], int(frozen["valor"]), frozen["chave_pix_destino"]


def charge(key, amount, reference, dest):
    """Charge with the intent's key: 'done', 'retry' (busy or no answer) or 'refused'."""
    headers = {"Idempotency-Key": key}
    if random.random() < TIMEOUT_RATE:
        headers["Idem-Demo-Fault"] = "drop"  # the answer is lost after the charge
    body = {"amount_cents": amount, "currency": "BRL", "customer": reference + "|" + dest}
    result = {}
    sending = threading.Thread(
        target=lambda: result.update(status=call("POST", "/v1/demo/charges", body, headers)[0]),
        daemon=True,
    )
    sending.start()
    if random.random() < KILL_RATE:
        time.sleep(0.001)
        emit(ev="kill", at="during-charge")
        time.sleep(30)
        os._exit(3)
    sending.join()
    status = result.get("status")
    if status is not None and 200 <= status < 300:
        return "done"
    if status is None or status == 409 or status >= 500:
        return "retry"
    return "refused"


def handle(msg, redelivered):
    """True: acknowledge; False: give the message back to the broker."""
    event = "/v1/events/rabbitmq/" + msg["reference"]
    status, v = call("POST", event, {"lease_ms": LEASE_MS})
    if status == 200:  # handled before (a copy or a redelivery): drop it
        return True
    if status == 409:  # another worker holds it: give it back when its lease ends
        wait_ms = v["lease_until_ms"] - time.time() * 1000
        time.sleep(max(0, min(wait_ms, LEASE_MS)) / 1000)
        return False
    if status != 201:
        time.sleep(0.2)
        return False
    if v.get("previous") == "expired":
        emit(ev="takeover")
    token = v["token"]
    point("before-intent")
    frozen = intent(msg, redelivered)
    if frozen is None:
        call("POST", event + "/fail", {"token": token, "retryable": True})
        time.sleep(0.2)
        return False
    key, amount, dest = frozen
    point("after-intent")
    outcome = charge(key, amount, msg["reference"], dest)
    if outcome == "done":
        point("after-charge")
        call("POST", event + "/complete", {"token": token})
        return True
    call("POST", event + "/fail", {"token": token, "retryable": outcome == "retry"})
    if outcome == "retry":
        time.sleep(0.2)
    return outcome == "refused"


def main():
    params = pika.URLParameters(os.environ["IDEM_SIM_BROKER"])
    try:
        conn = pika.BlockingConnection(params)
    except pika.exceptions.AMQPError as e:
        sys.exit("idem_worker: cannot reach the broker: %r" % e)
    ch = conn.channel()
    ch.basic_qos(prefetch_count=int(os.environ.get("IDEM_SIM_PREFETCH", "4")))

    def on_message(ch, method, _props, body):
        msg = json.loads(body)
        emit(ev="delivery", redelivered=method.redelivered, seq=msg.get("seq"))
        if handle(msg, method.redelivered):
            emit(ev="acking", seq=msg.get("seq"))
            ch.basic_ack(method.delivery_tag)
        else:
            ch.basic_nack(method.delivery_tag, requeue=True)

    ch.basic_consume(os.environ["IDEM_SIM_QUEUE"], on_message)
    ch.start_consuming()


if __name__ == "__main__":
    main()
