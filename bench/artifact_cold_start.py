"""Cold start of the built stack, measured on a pristine build.

Usage: python bench/artifact_cold_start.py [--runs N] [--sam PATH] [--build-dir DIR] [--no-requests]
       [--model-latency-ms 800] [--only ChatFunction,FactsFunction]

By default it runs a fresh ``sam build`` into a temporary folder (removed afterwards), so no
earlier run can have left bytecode in it; ``--build-dir`` measures an existing build instead
(``.aws-sam/build`` after ``make sam-build``). Prints the dependencies layer's size (unzipped,
as Lambda counts it against the 250 MB limit), how many of its ``.py`` files have bytecode,
and for each function the median over N fresh interpreters of:

- ``import cpu`` / ``import wall``: CPU and wall time of ``import app`` inside the child
  (``time.process_time`` / ``perf_counter`` around the import, tests/deploy/lambda_harness.py);
- ``process cpu`` / ``process wall``: the whole child, interpreter start included
  (``resource.getrusage(RUSAGE_CHILDREN)`` and wall time around it).

Then, unless ``--no-requests``, the first request: each function in a fresh interpreter (the same
flags) with the environment template.yaml gives it, against moto's standalone server and the
loopback search stub of tests/deploy/search_stub.py, serves one of its routes twice;
``first`` is the first request's CPU / wall time (client creation, secrets, lazy imports, the
caller's key read), ``warm`` the same request again, and ``extra`` the difference: what a cold
start adds to the first request beyond the import. With ``--model-latency-ms``, chat's and facts'
first requests run again with ``openai/`` models on the fake OpenAI-compatible endpoint
(``agent_memory.testing.fake_openai``) at that latency: the model client's import and set-up
show in the first request's CPU, the model's latency only in its wall time.

Each child is ``python -B -I -S lambda_harness.py TASK_ROOT LAYER_ROOT``: ``-B`` writes no
bytecode (Lambda's ``/var/task`` and ``/opt`` are read-only), ``-I -S`` leave only the
standard library on ``sys.path``, and the harness adds the function's artifact
(``/var/task``) and the layer's ``python/`` (``/opt/python``), which holds every third-party
package the functions import, so nothing from this venv's site-packages is seen. The same
is done for a reference import of twelve precompiled standard-library modules: the yardstick
that makes figures comparable across machines. It runs just before each run of a function, and
``x ref`` is the median of those pairs' CPU ratios, so load that comes and goes between runs
moves both sides of a ratio alike. CPU is the figure to compare;
load on the machine inflates wall time far more. Lambda's own runtime start is not included.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "tests" / "deploy" / "lambda_harness.py"
# Not imported by the interpreter's own start; all ship precompiled with CPython.
REFERENCE_MODULES = ["json", "decimal", "email.message", "http.client", "asyncio", "xml.etree.ElementTree",
                     "sqlite3", "csv", "logging", "urllib.request", "ssl", "dataclasses"]
REFERENCE = f"""
import json, sys, time
sys.stdout = sys.stderr
started, started_cpu = time.perf_counter(), time.process_time()
import {", ".join(REFERENCE_MODULES)}
sys.__stdout__.write(json.dumps({{"import_ms": (time.perf_counter() - started) * 1000,
                                 "import_cpu_ms": (time.process_time() - started_cpu) * 1000}}) + "\\n")
"""
sys.path.insert(0, str(REPO / "tests" / "deploy"))
import test_built_artifact as artifact  # noqa: E402 - the artifact check's moto, stub and environment

# The template's literal environment (OPENBLAS_NUM_THREADS, POWERTOOLS_*): what every function
# starts with on Lambda; the references to other resources are left to the first-request run.
TEMPLATE_ENV = {k: str(v) for k, v in artifact.TEMPLATE["Globals"]["Function"]["Environment"]["Variables"].items()
                if not isinstance(v, dict)}
ENV = {**TEMPLATE_ENV, "PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_LAMBDA_FUNCTION_NAME": "cold-start-bench"}
CTX = "/api/v1/bench-ctx"
# One route per function for the first request: its most frequent call.
FIRST_REQUEST = {
    "ChatFunction": ("POST", f"{CTX}/chat", {"message": "Where do I work?"}),
    "DocumentsFunction": ("GET", f"{CTX}/documents", None),
    "EntitiesFunction": ("GET", f"{CTX}/entities", None),
    "FactsFunction": ("POST", f"{CTX}/facts", {"text": "I work at Acme."}),
    "RecallFunction": ("POST", f"{CTX}/query", {"query": "Where do I work?"}),
    "SessionsFunction": ("GET", f"{CTX}/sessions", None),
    "StateFunction": ("GET", f"{CTX}/state", None),
    "ThreadsFunction": ("GET", f"{CTX}/threads", None),
}


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def compiled_share(layer: Path) -> tuple[int, int]:
    """(``.py`` files in the layer, how many have a cpython-311 ``.pyc`` beside them)."""
    sources = [p for p in layer.rglob("*.py")]
    tag = sys.implementation.cache_tag
    compiled = sum((p.parent / "__pycache__" / f"{p.stem}.{tag}.pyc").exists() for p in sources)
    return len(sources), compiled


def run_child(argv: list[str], stdin: str, cwd: Path) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=ENV, cwd=str(cwd), timeout=120)
    wall_ms = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = proc.stdout.splitlines()
    first = json.loads(lines[0]) if lines else {"import_error": proc.stderr[-2000:]}
    if "import_ms" not in first:
        raise SystemExit(f"{argv[-2:]}: {first.get('import_error')}\n{first.get('traceback', '')}")
    cpu_ms = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    return {"import_ms": first["import_ms"], "import_cpu_ms": first["import_cpu_ms"],
            "process_ms": wall_ms, "process_cpu_ms": cpu_ms}


def median_row(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def sam_path(given: str | None) -> str:
    for candidate in (given, os.environ.get("SAM"), str(REPO / ".venv-tools" / "bin" / "sam"), shutil.which("sam")):
        if candidate and Path(candidate).exists():
            return candidate
    raise SystemExit("no sam: run `make tools` or pass --sam")


def sam_build(sam: str, build_dir: Path) -> None:
    started = time.perf_counter()
    proc = subprocess.run([sam, "build", "--template-file", str(REPO / "template.yaml"), "--build-dir", str(build_dir)],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, "SAM_CLI_TELEMETRY": "0"})
    if proc.returncode:
        raise SystemExit(f"sam build failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    print(f"sam build into {build_dir}: {time.perf_counter() - started:.0f} s")


ONLY: set[str] = set()  # --only: these functions alone (a paired run of a few, sooner)


def report(build: Path, runs: int) -> None:
    layer = build / "DependenciesLayer" / "python"
    sources, compiled = compiled_share(layer)
    print(f"dependencies layer: {size_mb(layer.parent):.1f} MB unzipped, {compiled} of {sources} .py files "
          f"have {sys.implementation.cache_tag} bytecode")
    print(f"python -B -I -S, median of {runs} fresh interpreters ({sys.executable}, "
          f"{'.'.join(map(str, sys.version_info[:3]))})")
    header = f"{'':<22} {'artifact':>9} {'import cpu':>11} {'import wall':>12} {'process cpu':>12} " \
             f"{'process wall':>13} {'x ref':>6}"
    print(header)
    reference = [sys.executable, "-B", "-I", "-S", "-c", REFERENCE]
    # The reference runs just before each function's run, and the multiple is the median of
    # each pair's ratio, so load that comes and goes moves both sides of a ratio alike.
    measured: list[tuple[str, str, dict[str, float], float]] = []
    refs: list[dict[str, float]] = []
    for function in sorted(p for p in build.iterdir() if p.name.endswith("Function") and (not ONLY or p.name in ONLY)):
        argv = [sys.executable, "-B", "-I", "-S", str(HARNESS), str(function), str(layer)]
        rows, ratios = [], []
        for _ in range(runs):
            refs.append(run_child(reference, "", build))
            rows.append(run_child(argv, '"done"\n', function))
            ratios.append(rows[-1]["import_cpu_ms"] / refs[-1]["import_cpu_ms"])
        measured.append((function.name, f"{size_mb(function) * 1000:.1f}kB", median_row(rows), statistics.median(ratios)))

    def line(name: str, kb: str, row: dict[str, float], multiple: float) -> None:
        print(f"{name:<22} {kb:>9} {row['import_cpu_ms']:>8.0f} ms {row['import_ms']:>9.0f} ms "
              f"{row['process_cpu_ms']:>9.0f} ms {row['process_ms']:>10.0f} ms {multiple:>6.2f}")

    line("reference (12 stdlib)", "-", median_row(refs), 1.0)
    for name, kb, row, multiple in measured:
        line(name, kb, row, multiple)


def start_moto() -> tuple[subprocess.Popen, str]:
    port = artifact._free_port()
    server = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if server is None:
        raise SystemExit("no moto_server beside this python: install the dev extra")
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("moto_server did not start") from None
            time.sleep(0.2)


def first_requests(build: Path, runs: int, model_latency_ms: float | None = None) -> None:
    """The first request's extra time, per function: a fresh process, its route twice."""
    import boto3

    from agent_memory.adapters.dynamodb_table import create_table_from_template
    from agent_memory.http.local_server import LocalGateway, build_event

    moto, endpoint = start_moto()
    cluster = artifact.SearchCluster()
    try:
        aws = {"endpoint_url": endpoint, "region_name": "us-east-1", "aws_access_key_id": "testing",
               "aws_secret_access_key": "testing"}
        create_table_from_template(boto3.client("dynamodb", **aws), artifact.TABLE, REPO / "template.yaml")
        sm = boto3.client("secretsmanager", **aws)
        secrets = {"cursor": sm.create_secret(Name="cursor", SecretString=os.urandom(32).hex())["ARN"],
                   "bootstrap": sm.create_secret(Name="bootstrap", SecretString=os.urandom(16).hex())["ARN"],
                   "ingestion_queue": boto3.client("sqs", **aws).create_queue(QueueName="ingestion")["QueueUrl"]}
        boto3.client("s3", **aws).create_bucket(Bucket=artifact.UPLOAD_BUCKET)
        created = subprocess.run(
            [str(Path(sys.executable).parent / "agent-memory"), "keys", "create", "--table", artifact.TABLE,
             "--principal", "ops", "--group", "support", "--admin"], capture_output=True, text=True, timeout=120,
            env={**artifact.aws_env(endpoint), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        if created.returncode:
            raise SystemExit(f"keys create failed: {created.stderr}")
        key = created.stdout.split("store it now): ")[1].strip()
        gateway = LocalGateway(REPO)
        layer = build / "DependenciesLayer" / "python"
        # The stack's deploy step makes the index and its alias before any function runs.
        cfn = artifact.CloudFormationSide()
        index_step = artifact.FunctionProcess("SearchIndexFunction", build, artifact.function_env(
            "SearchIndexFunction", endpoint, cluster.listen("SearchIndexFunction"), secrets), layer)
        index_step.invoke({"RequestType": "Create", "ResponseURL": cfn.url, "StackId": "stack", "RequestId": "r1",
                           "LogicalResourceId": "SearchIndexSetup", "ResourceProperties": {}})
        index_step.finish()
        print(f"\nfirst request against moto (python -B -I -S, the template's environment), median of {runs}")
        print(f"{'':<22} {'route':<28} {'first cpu':>10} {'first wall':>11} {'warm cpu':>9} {'extra cpu':>10} "
              f"{'extra wall':>11}")
        def measure(name: str, env: dict[str, str], label: str = "") -> None:
            method, path, body = FIRST_REQUEST[name]
            route, params = gateway.match(method, path)
            data = json.dumps(body).encode() if body is not None else b""
            headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
            event = build_event(route, method, path, "", headers, data, params, "203.0.113.9")
            rows = []
            for _ in range(runs):
                fn = artifact.FunctionProcess(name, build, env, layer)  # python -B -I -S lambda_harness.py
                answers = []
                for _ in range(2):
                    fn.proc.stdin.write(json.dumps(event) + "\n")
                    fn.proc.stdin.flush()
                    answers.append(fn._read())
                fn.finish()
                first, warm = answers
                if "result" not in first or first["result"]["statusCode"] >= 400:
                    raise SystemExit(f"{name} {method} {path}: {first.get('result') or first.get('traceback')}")
                rows.append({"first_cpu": first["cpu_ms"], "first_ms": first["ms"], "warm_cpu": warm["cpu_ms"],
                             "extra_cpu": first["cpu_ms"] - warm["cpu_ms"], "extra_ms": first["ms"] - warm["ms"]})
            r = median_row(rows)
            print(f"{name + label:<22} {method + ' ' + path.removeprefix(CTX):<28} {r['first_cpu']:>7.0f} ms "
                  f"{r['first_ms']:>8.0f} ms {r['warm_cpu']:>6.0f} ms {r['extra_cpu']:>7.0f} ms {r['extra_ms']:>8.0f} ms")

        for name in sorted(n for n in FIRST_REQUEST if not ONLY or n in ONLY):
            measure(name, artifact.function_env(name, endpoint, cluster.listen(name), secrets))
        if model_latency_ms is not None:
            # The same first requests with a model behind them: the OpenAI-compatible fake at a
            # fixed latency, so the first request's CPU includes the model client's import and
            # set-up; its wall time includes the model's latency (CPU does not wait for it).
            from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer

            with FakeOpenAIServer(Behaviour(latency_ms=model_latency_ms, seed=1)) as fake:
                print(f"\nwith openai/ models on a fake OpenAI-compatible endpoint at {model_latency_ms:.0f} ms "
                      "(wall includes it; first cpu less the offline row's is the client's share)")
                for name in (n for n in ("ChatFunction", "FactsFunction") if not ONLY or n in ONLY):
                    env = artifact.function_env(name, endpoint, cluster.listen(name), secrets)
                    env |= {"AGENT_MEMORY_MODELS_EXTRACTION": "openai/fake-extract",
                            "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "OPENAI_BASE_URL": fake.url}
                    measure(name, env, " (openai)")
    finally:
        cluster.close()
        moto.terminate()
        try:
            moto.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a loaded machine: the figures are printed, just stop it
            moto.kill()
            moto.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sam", help="the sam CLI (default: $SAM, .venv-tools/bin/sam, then PATH)")
    parser.add_argument("--build-dir", type=Path, help="measure this existing build instead of a fresh one")
    parser.add_argument("--no-requests", action="store_true", help="the import only, no first request")
    parser.add_argument("--model-latency-ms", type=float, default=None,
                        help="also time chat's and facts' first request with openai/ models on a fake endpoint")
    parser.add_argument("--only", default="", help="comma-separated functions to measure (default: all)")
    args = parser.parse_args()
    ONLY.update(name for name in args.only.split(",") if name)
    if args.build_dir:
        if not (args.build_dir / "DependenciesLayer" / "python").exists():
            print(f"no build in {args.build_dir}: run `make sam-build` first", file=sys.stderr)
            return 2
        report(args.build_dir.resolve(), args.runs)
        if not args.no_requests:
            first_requests(args.build_dir.resolve(), args.runs, args.model_latency_ms)
        return 0
    sam = sam_path(args.sam)
    with tempfile.TemporaryDirectory(prefix="agent-memory-build-") as tmp:
        sam_build(sam, Path(tmp) / "build")
        report(Path(tmp) / "build", args.runs)
        if not args.no_requests:
            first_requests(Path(tmp) / "build", args.runs, args.model_latency_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
