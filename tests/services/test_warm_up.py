"""``Runtime.warm_up`` (what ``agent-memory serve`` runs before it listens): the configured
models' clients and the chat and write services are built, with no model called, so the first
chat after a start does not pay ``import openai``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.conftest import REPO

CODE = textwrap.dedent("""
    import json, sys, tempfile
    from agent_memory.config import load_settings
    from agent_memory.runtime import Runtime

    env = {"AGENT_MEMORY_DATA_DIR": tempfile.mkdtemp(), "AGENT_MEMORY_CURSOR_SECRET": "s",
           "AGENT_MEMORY_MODELS_EXTRACTION": "openai/extract-model", "AGENT_MEMORY_MODELS_RESPONSE": "openai/chat-model",
           "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1", **json.loads(sys.argv[1])}
    rt = Runtime(load_settings(env=env, config_path=None))
    before = "openai" in sys.modules
    rt.warm_up()
    print(json.dumps({"before": before, "after": "openai" in sys.modules,
                      "models": sorted(rt.__dict__.get("_models", {})),
                      "services": sorted(k for k in ("chat", "facts", "retrieval") if k in rt.__dict__)}))
""")


def warm(extra_env: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_MEMORY_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "shared"), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", CODE, json.dumps(extra_env)], capture_output=True, text=True,
                         env=env, cwd=REPO, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_warm_up_builds_the_model_clients_and_the_chat_path_without_calling_a_model():
    # a port nothing listens on: any model call would fail the warm-up
    got = warm({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert (got["before"], got["after"]) == (False, True)
    assert got["models"] == ["openai/chat-model", "openai/extract-model"]
    assert got["services"] == ["chat", "facts", "retrieval"]


def test_offline_models_warm_up_without_the_openai_package():
    got = warm({"AGENT_MEMORY_MODELS_EXTRACTION": "offline/deterministic",
                "AGENT_MEMORY_MODELS_RESPONSE": "offline/deterministic"})
    assert (got["before"], got["after"]) == (False, False)
    assert got["models"] == ["offline/deterministic"]
    assert got["services"] == ["chat", "facts", "retrieval"]
