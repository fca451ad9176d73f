"""The book's agent-framework programs (clients/python/examples/frameworks)
run as written, each against its own tenant, and the ledger confirms one
charge where the model asked twice; each page of the book includes the
program the test runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Tenant

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples" / "frameworks"
BOOK = HERE.parent.parent.parent / "docs" / "book" / "src" / "agent-frameworks"
PROGRAMS = {"langchain_agent.py": "langchain", "pydantic_ai_agent.py": "pydantic-ai", "openai_agents_agent.py": "openai-agents"}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_book_s_program_runs_and_charges_once(tenant: Tenant, program: str) -> None:
    env = dict(os.environ, IDEM_URL=tenant.url, IDEM_TOKEN=tenant.token)
    done = subprocess.run([sys.executable, str(EXAMPLES / program)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = done.stdout.strip().splitlines()
    assert first.startswith("call_1 False charged 18000 cents, charge ch_"), first
    assert second.startswith("call_2 True charged 18000 cents, charge ch_"), second
    assert first.split()[-1] == second.split()[-1], "the second answer is the first charge"
    assert [c["amount_cents"] for c in tenant.charges()] == [18000]


def test_every_program_is_a_page_s_whole_program() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(PROGRAMS)
    for program, page in PROGRAMS.items():
        anchor = program.removesuffix("_agent.py")
        text = (BOOK / f"{page}.md").read_text()
        assert f"{{{{#include ../../../../clients/python/examples/frameworks/{program}:{anchor}}}}}" in text, page
        source = (EXAMPLES / program).read_text()
        block = source.split(f"# ANCHOR: {anchor}\n")[1].split(f"# ANCHOR_END: {anchor}")[0]
        assert block.startswith("import ") and "import idem_client" in block, program
