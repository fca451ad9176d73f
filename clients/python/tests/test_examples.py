"""The book's examples (clients/python/examples) run as written, each
against its own tenant; the ledger confirms what they claim."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import Tenant

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
SCRIPTS = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_books_example_runs(tenant: Tenant, script: str) -> None:
    env = dict(os.environ, IDEM_URL=tenant.url, IDEM_TOKEN=tenant.token)
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    if script == "charge_once.py":
        assert [c["amount_cents"] for c in tenant.charges()] == [18000]


def test_every_example_is_in_the_book() -> None:
    book = open(os.path.join(EXAMPLES, "..", "..", "..", "docs", "book", "src", "python-client.md")).read()
    for script in SCRIPTS:
        assert f"clients/python/examples/{script}" in book, script


def test_the_readmes_tour_is_the_tested_example() -> None:
    root = os.path.join(EXAMPLES, "..", "..", "..")
    readme = open(os.path.join(root, "README.md")).read()
    example = open(os.path.join(EXAMPLES, "charge_once.py")).read()
    block = example.split("# ANCHOR: decorator\n")[1].split("# ANCHOR_END: decorator")[0]
    assert "<!-- charge-once-python -->\n```python\n" + block + "```" in readme
    # The package's own README shows the same program.
    package_readme = open(os.path.join(EXAMPLES, "..", "README.md")).read()
    assert "```python\n" + block + "```" in package_readme


def test_every_snippet_the_book_shows_is_a_whole_program() -> None:
    # The book includes each example by its anchor: what it shows must
    # start at the imports and build its client, so a reader can run it as
    # printed (the tests above run these very files).
    for script in SCRIPTS:
        source = open(os.path.join(EXAMPLES, script)).read()
        (name,) = re.findall(r"^# ANCHOR: (\w+)$", source, re.M)
        block = source.split(f"# ANCHOR: {name}\n")[1].split(f"# ANCHOR_END: {name}")[0]
        assert block.startswith(("import ", "from ")), script
        assert "import idem_client" in block, script
        assert re.search(r"idem_client\.(Async)?Client\(|serve\(\)", block), script
