"""Queue and webhook deduplication with an event claim."""

# ANCHOR: events
import os

import idem_client

client = idem_client.Client(base_url=os.environ["IDEM_URL"], token=os.environ["IDEM_TOKEN"])
handled = []

def on_message(message_id: str, body: dict) -> None:
    with client.events.claim("rabbitmq", message_id, lease_ms=30_000) as ev:
        if ev.duplicate:
            return  # handled before: acknowledge and drop it
        handled.append(body)  # an exception here releases it for redelivery


on_message("msg-1", {"n": 1})
on_message("msg-1", {"n": 1})  # the broker redelivered it
assert handled == [{"n": 1}]
print("handled once:", handled)
# ANCHOR_END: events
