"""Writes the compact price table idem bundles (see scripts/update-prices).

One tab-separated line per model: provider id, provider name, model id, model
name, then USD per 1M tokens for input, cached input (cache read) and output,
and whether the input price has tiers (then the base tier is kept). A price
the table does not give is left empty.
"""

import datetime
import sys
from decimal import Decimal

from genai_prices.data import providers

version = sys.argv[1]
today = datetime.datetime.now(datetime.timezone.utc)


def text(d):
    # Eight decimals is what the calculator keeps for a price; rounding here
    # also drops the float artefacts some upstream entries carry
    # (0.13999999999999999 is 0.14).
    return format(d.quantize(Decimal("0.00000001")).normalize(), "f")


def base(price):
    if price is None:
        return "", False
    tiers = getattr(price, "tiers", None)
    if tiers is not None:
        return text(price.base), bool(tiers)
    return text(price), False


def clean(text):
    return " ".join((text or "").split())


rows = []
for p in providers:
    for m in p.models:
        prices = m.get_prices(today)
        inp, tiered = base(getattr(prices, "input_mtok", None))
        cached, _ = base(getattr(prices, "cache_read_mtok", None))
        out, _ = base(getattr(prices, "output_mtok", None))
        if not inp and not out:
            continue  # not priced per text token (images, audio, search)
        rows.append((p.id, clean(p.name), m.id, clean(m.name) or m.id, inp, cached, out, "tiered" if tiered else ""))

rows.sort(key=lambda r: (r[0], r[2]))
print(f"# genai-prices {version} (https://github.com/pydantic/genai-prices, MIT), prices in effect on {today:%Y-%m-%d}")
print("# currency\tUSD\tper\t1M tokens")
print(f"# snapshot\t{today:%Y-%m-%d}")
print("# provider\tprovider_name\tmodel\tmodel_name\tinput\tcached_input\toutput\tnote")
for r in rows:
    print("\t".join(r))
