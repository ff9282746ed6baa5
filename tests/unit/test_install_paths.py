"""The install lines the README shows: what `make serve` installs covers the commands it shows,
the wheel line names what `make dist` builds, and `make mcp-config` prints a registration a
host can start (an absolute command that exists)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _recipe(target: str) -> str:
    match = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", MAKEFILE, re.M)
    assert match, f"no {target} target in the Makefile"
    return match.group(1)


def _serve_extras() -> list[str]:
    extras = re.search(r"^SERVE_EXTRAS := (\S+)$", MAKEFILE, re.M)
    assert extras, "the Makefile names the extras make serve installs"
    return extras.group(1).split(",")


def test_make_serve_installs_the_server_the_mcp_server_and_the_progress_bars() -> None:
    extras = _serve_extras()
    assert {"server", "mcp", "cli"} <= set(extras)
    assert set(extras) <= set(PYPROJECT["project"]["optional-dependencies"])
    assert "-e '.[$(SERVE_EXTRAS)]'" in _recipe("$(VENV)/.installed")
    assert "$(SERVE_EXTRAS),dev" in _recipe("$(VENV)/.installed-dev")
    assert re.search(r"^serve: install$", MAKEFILE, re.M)


def test_the_readme_wheel_line_names_what_make_dist_builds() -> None:
    assert "pip wheel" in _recipe("dist") and "--wheel-dir dist" in _recipe("dist")
    project = PYPROJECT["project"]
    wheel = f"dist/{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"
    assert f"make dist && pip install {wheel}" in README
    assert "pip install agent-memory " not in README  # not on a package index
    assert project["dependencies"] and all(d.split(">")[0] in {"pydantic", "httpx"} for d in project["dependencies"])


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_mcp_config_prints_a_registration_with_an_existing_absolute_command() -> None:
    venv = Path(sys.executable).absolute().parent.parent
    if not (venv / "bin" / "agent-memory").is_file():
        pytest.skip("the tests do not run from a venv with the agent-memory script")
    # -o install: the venv running the tests is already installed (no pip run here)
    out = subprocess.run(["make", "-s", "-o", "install", "mcp-config", f"VENV={venv}", "CONTEXT=globex",
                          "PORT=9123"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "AGENT_MEMORY_API_KEY": ""})
    assert out.returncode == 0, out.stderr
    entry = json.loads(out.stdout)["mcpServers"]["agent-memory"]
    command = Path(entry["command"])
    assert command.is_absolute() and command.is_file() and os.access(command, os.X_OK)
    from agent_memory.interfaces import cli

    args = cli.build_parser().parse_args(entry["args"])
    assert args.command == "mcp" and args.context == "globex" and args.transport == "stdio"
    assert entry["env"] == {"AGENT_MEMORY_URL": "http://127.0.0.1:9123"}


def test_the_registration_falls_back_to_the_interpreter_without_the_script(tmp_path, monkeypatch) -> None:
    from agent_memory.interfaces.mcp import command

    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("AGENT_MEMORY_API_KEY", "k1")
    entry = command.registration("acme", "http://example.test")["mcpServers"]["agent-memory"]
    assert entry == {"command": str(python), "args": ["-m", "agent_memory.interfaces.cli", "mcp", "--context", "acme"],
                     "env": {"AGENT_MEMORY_URL": "http://example.test", "AGENT_MEMORY_API_KEY": "k1"}}
