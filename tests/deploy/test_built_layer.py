"""The built dependencies layer (shared/Makefile) is lean and precompiled: every ``.py`` in it
has unchecked-hash bytecode for the Lambda runtime's CPython (3.11), so Lambda's read-only
``/opt`` compiles nothing on a cold start; it ships nothing Lambda never imports; and every
function imports from its artifact with ``python -B`` (nothing written), seeing only the
artifact, the layer and the standard library.

Reads ``.aws-sam/build`` (``make sam-build``) and is skipped when there is none; ``make test``
runs it after the built-artifact check (``make artifact-check``), which waits for the
background build, and the unit run leaves it out so it never reads a build in progress.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import layer_arch
import pytest

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".aws-sam" / "build"
LAYER = BUILD / "DependenciesLayer" / "python"
ARM64_LAYER = BUILD / "DependenciesLayerArm64" / "python"  # built beside it, checked statically
LAYERS = {"x86_64": LAYER, "arm64": ARM64_LAYER}
HARNESS = Path(__file__).with_name("lambda_harness.py")
FUNCTIONS = sorted(n for n, r in load_template(REPO / "template.yaml")["Resources"].items()
                   if r["Type"] == "AWS::Serverless::Function")
CACHE_TAG = "cpython-311"  # template.yaml: Runtime python3.11
UNCHECKED_HASH = 0b01  # PEP 552 flags: hash-based, source not checked
# agent_memory/interfaces ships its MCP tool table only (the /mcp route serves it).
NEVER_IMPORTED = ["uvicorn", "click", "bin", "agent_memory/interfaces/cli", "agent_memory/interfaces/inspector",
                  "agent_memory/interfaces/reference", "swagger_ui_bundle",
                  "agent_memory/interfaces/cli_client.py", "agent_memory/testing",
                  "agent_memory/http/local_server.py", "agent_memory/http/asgi.py", "agent_memory/http/gateway.py"]

BUILD_RC = REPO / ".aws-sam" / "build.rc"


def _wait_for_the_background_build() -> None:
    if os.environ.get("AGENT_MEMORY_SAM_BUILD") != "background":
        return
    deadline = time.monotonic() + 1200
    while not BUILD_RC.exists():
        if time.monotonic() > deadline:
            pytest.fail("sam build did not finish within 20 minutes")
        time.sleep(2)
    if BUILD_RC.read_text().strip() != "0":
        pytest.fail("sam build failed (.aws-sam/build.log)")


_wait_for_the_background_build()
pytestmark = pytest.mark.skipif(not LAYER.is_dir(), reason="no build: run `make sam-build`")


@pytest.mark.parametrize("arch", sorted(LAYERS))
def test_every_module_in_the_layer_has_unchecked_hash_bytecode_for_the_runtime(arch: str):
    layer = LAYERS[arch]
    sources = list(layer.rglob("*.py"))
    assert len(sources) > 1000
    missing, wrong = [], []
    for source in sources:
        pyc = source.parent / "__pycache__" / f"{source.stem}.{CACHE_TAG}.pyc"
        if not pyc.exists():
            missing.append(source.relative_to(layer))
            continue
        flags = int.from_bytes(pyc.read_bytes()[4:8], "little")
        if flags != UNCHECKED_HASH:
            wrong.append((source.relative_to(layer), flags))
    assert missing == [], f"{len(missing)} modules have no {CACHE_TAG} bytecode: {missing[:10]}"
    assert wrong == [], f"bytecode that is not unchecked-hash: {wrong[:10]}"


@pytest.mark.parametrize("arch", sorted(LAYERS))
def test_the_layer_ships_nothing_lambda_never_imports(arch: str):
    layer = LAYERS[arch]
    assert (layer / "agent_memory" / "http" / "api.py").exists()
    present = [name for name in NEVER_IMPORTED if (layer / name).exists()]
    assert present == []
    assert not list(layer.glob("uvicorn*")) and not list(layer.glob("click*"))
    assert not list((layer / "numpy").rglob("tests")), "numpy's test suites do not ship"


@pytest.mark.parametrize("arch", sorted(LAYERS))
def test_every_native_file_and_wheel_in_the_layer_is_for_its_architecture(arch: str):
    """Static (arm64 code cannot be imported here): each ELF file's e_machine and each
    .dist-info/WHEEL's tags (layer_arch.py); no x86_64 binary is in the arm64 layer."""
    layer = LAYERS[arch]
    native = layer_arch.elf_files(layer)
    assert len(native) >= 10, "numpy, pydantic-core, jiter, pyyaml and charset-normalizer ship native code"
    assert layer_arch.problems(layer, arch) == []


def test_both_layers_hold_the_same_packages_and_the_same_python():
    dists = {arch: sorted(p.name for p in layer.glob("*.dist-info")) for arch, layer in LAYERS.items()}
    assert dists["arm64"] == dists["x86_64"]
    python = {arch: sorted(str(p.relative_to(layer)) for p in (layer / "agent_memory").rglob("*.py"))
              for arch, layer in LAYERS.items()}
    assert python["arm64"] == python["x86_64"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_imports_with_python_B_from_the_artifact(name: str):
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": name}
    proc = subprocess.run([sys.executable, "-B", "-I", "-S", str(HARNESS), str(BUILD / name), str(LAYER)],
                          input='"done"\n', capture_output=True, text=True, env=env, cwd=str(BUILD / name),
                          timeout=120)
    first = json.loads(proc.stdout.splitlines()[0])
    assert first.get("ready"), first.get("traceback") or first
    assert first["sys_path"][:2] == [str(BUILD / name), str(LAYER)]
    assert first["site_packages"] == []


# Imports a function as Lambda would with tracing on, then builds the Tracer and records one
# span into an in-memory emitter: the X-Ray SDK and wrapt come from the layer, the import
# itself loads neither (the Tracer is built on the first invocation), botocore gets patched.
TRACED_DRIVER = """
import json, sys
sys.path[:0] = sys.argv[1:3]
sys.stdout = sys.stderr
import app
from agent_memory import tracing
doc = {"enabled": tracing.enabled(), "xray_at_import": "aws_xray_sdk" in sys.modules}
tracing.tracer()
import aws_xray_sdk, wrapt
from aws_xray_sdk.core import patcher, xray_recorder
sent = []
class Emitter:
    ip, port = "127.0.0.1", 2000
    def send_entity(self, entity): sent.append(json.loads(entity.serialize()))
    def set_daemon_address(self, address): pass
xray_recorder.configure(emitter=Emitter())
tracing._active = True
with tracing.span("store.get", store="dynamodb"):
    pass
doc.update(xray=aws_xray_sdk.__file__, wrapt=wrapt.__file__, patched=sorted(patcher._PATCHED_MODULES),
           sent=[(s["name"], s["annotations"]) for s in sent])
sys.__stdout__.write(json.dumps(doc) + "\\n")
"""


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_traced_function_builds_its_tracer_from_the_layer_on_first_use(name: str):
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": name,
           "LAMBDA_TASK_ROOT": str(BUILD / name),
           "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad9;Sampled=1"}
    proc = subprocess.run([sys.executable, "-B", "-I", "-S", "-c", TRACED_DRIVER, str(BUILD / name), str(LAYER)],
                          capture_output=True, text=True, env=env, cwd=str(BUILD / name), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout.splitlines()[-1])
    assert doc["enabled"] and not doc["xray_at_import"]
    assert doc["xray"].startswith(str(LAYER)) and doc["wrapt"].startswith(str(LAYER))
    assert "botocore" in doc["patched"]
    assert doc["sent"] == [["store.get", {"store": "dynamodb"}]]


def test_each_function_with_its_layer_fits_lambdas_unzipped_limit():
    """The preflight's built-artifact check (tests/deploy/preflight.py, Lambda's 250 MB for a
    function's code and its layers, unzipped) on this build: the larger layer with each function."""
    import preflight

    found = preflight.check_built_artifacts(BUILD)
    functions = [n for n, r in load_template(REPO / "template.yaml")["Resources"].items()
                 if r["Type"] == "AWS::Serverless::Function"]
    assert len(found) == len(functions)
    assert [f"{f.where}: {f.value:,} bytes" for f in found if not f.ok] == []
