"""Every tool of the six agent-framework integrations of the Spectron client (spectron-pydantic-ai,
-strands-agents, -crew-ai, -google-adk, -hermes and -openai-agents-sdk), called directly (no agent
model) against the local server, started as a subprocess on SQLite, each call's effect checked on
the server (``drive_tools.py``).

The packages and their frameworks live in their own virtual environment, .venv-integrations
(``make integrations-install``; ``make test`` builds it in the background while the unit tests
run and then runs this module with ``AGENT_MEMORY_INTEGRATIONS_REQUIRED=1``). Without it, and
not required, the test skips saying so. This test prints each tool's outcome and checks it
against one named list: the calls an integration breaks itself before sending anything (a
method or argument the pinned client does not have), which docs/integrations.md lists with the
call and the error. Every other tool must work, effect included; a listed one that starts
working fails the test until its entry goes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
VENV_PYTHON = REPO / ".venv-integrations" / "bin" / "python"
INSTALL_DIR = REPO / ".integrations"  # install.started / install.rc / install.log (the Makefile)
DRIVER = Path(__file__).with_name("drive_tools.py")
CONTEXT = "acme-prod"
API_KEY = "sk-integrations-test"  # no keys configured: the local admin, whatever the bearer

# (package, tool) -> why it fails whatever the server serves (surrealdb 3.0.0a4's client);
# docs/integrations.md lists each with its call and error
BROKEN_IN_PACKAGE: dict[tuple[str, str], str] = {
    ("spectron-strands-agents", "reflect"): "calls Spectron.reflect() without its required query",
    ("spectron-strands-agents", "upload"): "calls Spectron.upload, which the client does not have "
                                           "(it uploads through documents.upload)",
    ("spectron-strands-agents", "inspect"): "calls Spectron.inspect(query=...); the client takes a ref",
    ("spectron-strands-agents", "forget"): "always passes hard=False; the client's forget takes purge",
    ("spectron-google-adk", "remember"): "calls AsyncSpectron.remember(scope=...); the client takes scopes",
    ("spectron-google-adk", "chat"): "calls AsyncSpectron.chat(scope=...); the client takes scopes",
}

PACKAGES = {"spectron-pydantic-ai", "spectron-strands-agents", "spectron-crew-ai", "spectron-google-adk",
            "spectron-hermes", "spectron-openai-agents-sdk"}
MODULES = "spectron_pydantic_ai, spectron_strands, spectron_crewai, spectron_google_adk, spectron_hermes, " \
          "spectron_openai_agents_sdk"


def _wait_for_venv(timeout_s: float = 900.0) -> str | None:
    """``None`` when the venv is ready (waiting for a background install still running),
    else why not."""
    started = (INSTALL_DIR / "install.started").exists() and not (INSTALL_DIR / "install.rc").exists()
    deadline = time.monotonic() + timeout_s
    while started and not (INSTALL_DIR / "install.rc").exists() and time.monotonic() < deadline:
        time.sleep(1.0)
    rc = INSTALL_DIR / "install.rc"
    if rc.exists() and rc.read_text().strip() != "0":
        return f"installing .venv-integrations failed (see {INSTALL_DIR / 'install.log'})"
    if not VENV_PYTHON.exists():
        return ".venv-integrations is missing: run `make integrations-install`"
    probe = subprocess.run([str(VENV_PYTHON), "-c", f"import {MODULES}"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        return f".venv-integrations lacks the integrations ({probe.stderr.strip()[-300:]}): run `make integrations-install`"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = _wait_for_venv()
    if missing:
        if os.environ.get("AGENT_MEMORY_INTEGRATIONS_REQUIRED"):
            pytest.fail(missing)
        pytest.skip(missing)
    port = _free_port()
    data = tmp_path_factory.mktemp("integrations-data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update({"PYTHONPATH": os.pathsep.join([str(REPO / "shared"), env.get("PYTHONPATH", "")]),
                "LOG_LEVEL": "WARNING"})
    log = (data / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from agent_memory.interfaces.cli import main; "
                             "sys.exit(main())", "serve", "--port", str(port), "--data-dir", str(data)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(data))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the local server did not start: {(data / 'server.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_integration_tools_against_the_local_server(local_server: str) -> None:
    run = subprocess.run([str(VENV_PYTHON), str(DRIVER), local_server, CONTEXT, API_KEY],
                         capture_output=True, text=True, timeout=300, cwd=str(REPO))
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    rows = [(pkg, tool, out) for pkg, tools in report.items() for tool, out in tools.items()]
    print("\nintegration tools against the local server:")
    for pkg, tool, out in rows:
        state = "works" if out["ok"] else f"fails ({out['error'][:160]})"
        print(f"  {pkg:26} {tool:9} {state}")
    assert {pkg for pkg, _, _ in rows} == PACKAGES
    assert set(BROKEN_IN_PACKAGE) <= {(pkg, tool) for pkg, tool, _ in rows}, "a listed tool is no longer offered"
    problems = []
    for pkg, tool, out in rows:
        if (pkg, tool) in BROKEN_IN_PACKAGE:
            if out["ok"]:
                problems.append(f"{pkg} {tool} works now: remove it from BROKEN_IN_PACKAGE and docs/integrations.md")
            elif "site-packages/spectron_" not in out.get("at", ""):
                problems.append(f"{pkg} {tool} now fails outside the package: {out['error']} at {out.get('at')}")
        elif not out["ok"]:
            problems.append(f"{pkg} {tool} fails: {out['error']} at {out.get('at')}")
    assert not problems, "\n".join(problems)
    working = sum(out["ok"] for _, _, out in rows)
    print(f"  {working} of {len(rows)} tool calls hold; the other {len(rows) - working} break in the package")
