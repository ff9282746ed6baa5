"""A bounded schemathesis run over every operation of openapi.yaml against the local server.

Fixed seed, about 90 s (``--max-time``), outside the suite's per-test timeout. Checks: no
5xx from any generated request (``not_a_server_error``), every response matches its schema
(``response_schema_conformance``), and schema-valid requests are accepted
(``positive_data_acceptance``: 2xx, or 401/403/404/409 the spec documents). The hooks in
``schemathesis_hooks.py`` accept only 400s that name a documented rule OpenAPI cannot
express (each listed there).

    .venv/bin/python -m pytest tests/fuzz -p no:xdist -s    # prints schemathesis' summary
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# A longer hunt with another seed: AGENT_MEMORY_FUZZ_SEED=7 AGENT_MEMORY_FUZZ_MAX_TIME=600 pytest tests/fuzz
SEED = int(os.environ.get("AGENT_MEMORY_FUZZ_SEED", "20261201"))
MAX_TIME_S = int(os.environ.get("AGENT_MEMORY_FUZZ_MAX_TIME", "60"))  # bounded: about 3,000 cases on 2 cores


@pytest.fixture
def store_kind() -> str:
    return "sqlite"


@pytest.mark.timeout(MAX_TIME_S + 300)
def test_bounded_schemathesis_run(server, tmp_path: Path):
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "schemathesis.cli", "run", str(REPO / "openapi.yaml"), "--url", server,
           "--checks", "not_a_server_error,response_schema_conformance,positive_data_acceptance",
           "--phases", "examples,coverage,fuzzing", "--seed", str(SEED), "--max-examples", "25",
           "--max-time", str(MAX_TIME_S), "--workers", "1", "--request-timeout", "30", "--no-color",
           "--warnings", "off"]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=MAX_TIME_S + 240)
    output = run.stdout + run.stderr
    summary = output[output.rfind("SUMMARY"):] if "SUMMARY" in output else output[-3000:]
    print(summary)
    generated = re.search(r"(\d+) generated", output)
    assert generated and int(generated.group(1)) > 300, summary
    assert run.returncode == 0, output[-20000:]
