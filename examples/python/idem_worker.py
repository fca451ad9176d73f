#!/usr/bin/env python3
"""idem's reference queue consumer, in Python (idem_client + pika).

For every message: claim it as an event (a copy or a redelivery of a handled
message is a duplicate: acknowledge it and skip the model), then charge
through idem_client's guard. The intent is recorded before acting (the
model runs only while nothing is frozen for the reference), the charge runs
only in the call that holds the claim, on the payload the first delivery
froze and with the key derived from it, and an outcome left unknown by a
killed worker or a lost answer is reconciled by re-sending with the same
key (the provider deduplicates it). A worker killed anywhere in between
leaves nothing half done: the broker redelivers, the claims' leases run
out, and the next delivery finds the charge instead of repeating it.

It runs as a worker of `idem simulate --broker ... --strategies idem
--worker-command "python3 examples/python/idem_worker.py"`, which sets:
  IDEM_URL, IDEM_TOKEN                  idem's API and the tenant's token
  IDEM_SIM_BROKER, IDEM_SIM_QUEUE       where to consume
  IDEM_SIM_PREFETCH, IDEM_SIM_LEASE_MS  unacknowledged messages held; claim lease
  IDEM_SIM_KILL_RATE, IDEM_SIM_TIMEOUT_RATE, IDEM_SIM_DIVERGENCE_RATE
                                         the simulation's faults
The lines it prints on stdout (`emit`) and the kill points (`point`) are the
simulation's hooks, not part of the pattern: drop them when you copy it.
Needs `pip install pika ./clients/python`.
"""

import json
import os
import random
import sys
import threading
import time
from decimal import Decimal

import httpx
import pika

import idem_client

BASE = os.environ["IDEM_URL"]
TOKEN = os.environ["IDEM_TOKEN"]
LEASE_MS = int(os.environ.get("IDEM_SIM_LEASE_MS", "30000"))
KILL_RATE = float(os.environ.get("IDEM_SIM_KILL_RATE", "0"))
TIMEOUT_RATE = float(os.environ.get("IDEM_SIM_TIMEOUT_RATE", "0"))
DIVERGENCE_RATE = float(os.environ.get("IDEM_SIM_DIVERGENCE_RATE", "0"))

client = idem_client.Client(BASE, TOKEN)
psp = httpx.Client(base_url=BASE, headers={"authorization": "Bearer " + TOKEN}, timeout=30)


def emit(**line):
    """A line for the simulator (a hook, not part of the pattern)."""
    print(json.dumps(line), flush=True)


def point(at):
    """A kill point: maybe ask the simulator to SIGKILL us here, and wait."""
    if random.random() < KILL_RATE:
        emit(ev="kill", at=at)
        time.sleep(30)
        os._exit(3)


def model(msg, redelivered):
    """The model stub: right the first time; a retry may read another amount."""
    emit(ev="model")
    amount = msg["amount_cents"]
    if (redelivered or msg.get("retry")) and random.random() < DIVERGENCE_RATE:
        amount += 100 * random.randint(1, 49)
    return {
        "cliente_id": msg["reference"],
        "valor": "%d.%02d" % divmod(amount, 100),
        "chave_pix_destino": msg["destination"],
        "referencia_intencao": msg["reference"],
    }


def send(intent, fault=False):
    """The provider call, with the intent's key: its answer, or an exception
    when it refused (Failed) or did not answer (the outcome is unknown)."""
    frozen = intent.payload  # the candidate as first sent: "180.00", not cents
    body = {
        "amount_cents": int(Decimal(frozen["valor"]) * 100),
        "currency": "BRL",
        "customer": frozen["referencia_intencao"] + "|" + frozen["chave_pix_destino"],
    }
    headers = {"Idempotency-Key": intent.key}
    if fault:
        headers["Idem-Demo-Fault"] = "drop"  # the answer is lost after the charge
    r = psp.post("/v1/demo/charges", json=body, headers=headers)
    if 200 <= r.status_code < 300:
        return r.json()
    if r.status_code == 422:
        raise idem_client.Failed(r.text, retryable=False)
    raise RuntimeError("the provider answered %d" % r.status_code)


def resend(intent):
    """Reconciles an uncertain charge: the provider honours the key, so the
    same request again returns the first charge (or makes it, once)."""
    return send(intent)


@client.once("pix.cobranca", lease_ms=LEASE_MS, max_wait=LEASE_MS / 1000 + 5, reconcile=resend)
def charge(intent):
    point("after-intent")
    result = {}

    def run():
        try:
            result["ok"] = send(intent, fault=random.random() < TIMEOUT_RATE)
        except Exception as e:  # handed to the caller below
            result["error"] = e

    sending = threading.Thread(target=run, daemon=True)
    sending.start()
    if random.random() < KILL_RATE:
        time.sleep(0.001)
        emit(ev="kill", at="during-charge")
        time.sleep(30)
        os._exit(3)
    sending.join()
    if "error" in result:
        raise result["error"]
    return result["ok"]


def handle(msg, redelivered):
    """True: acknowledge; False: give the message back to the broker."""
    try:
        with client.events.claim("rabbitmq", msg["reference"], lease_ms=LEASE_MS) as ev:
            if ev.duplicate:  # handled before (a copy or a redelivery): drop it
                return True
            if ev.previous == "expired":
                emit(ev="takeover")
            point("before-intent")
            charge(lambda: model(msg, redelivered), reference=msg["reference"])
            point("after-charge")
        return True
    except idem_client.InFlight as e:  # another worker holds it: give it back after its lease
        time.sleep(max(0.0, min(e.retry_after, LEASE_MS / 1000)))
        return False
    except (idem_client.Failed, idem_client.FailedForGood):  # the provider refused for good
        return True
    except Exception:  # an unknown outcome, or idem unreachable: the claim was released
        time.sleep(0.2)
        return False


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
