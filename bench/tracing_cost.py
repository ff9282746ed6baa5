"""What X-Ray tracing adds to each function's cold start, on a pristine build.

Usage: python bench/tracing_cost.py [--runs N] [--sam PATH] [--build-dir DIR]

Builds like ``bench/artifact_cold_start.py`` (a fresh ``sam build`` into a temporary folder,
or ``--build-dir``) and runs each function's artifact in fresh ``python -B -I -S``
interpreters that see only the function's folder, the layer and the standard library. For
each function, the median over N interpreters of (CPU time, ``time.process_time``):

- ``import off`` / ``import on``: ``import app`` without and with tracing enabled
  (``LAMBDA_TASK_ROOT`` and an ``_X_AMZN_TRACE_ID`` set, as on Lambda). They should agree:
  the Tracer is built on the first invocation, not at import;
- ``tracer, cold``: building the Tracer right after the import (``tracing.tracer()``:
  ``aws_xray_sdk`` imported, botocore imported and patched), i.e. the most a first traced
  invocation can add;
- ``tracer, warm``: the same after botocore is loaded, which every function's first request
  does anyway (its record store is DynamoDB): what a first traced invocation really adds;
- ``span``: one ``store``-style span opened and closed, in microseconds (every later call).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from artifact_cold_start import ENV, sam_build, sam_path  # noqa: E402

DRIVER = """
import json, sys, time
task_root, layer_root, warm = sys.argv[1], sys.argv[2], sys.argv[3] == "warm"
sys.path[:0] = [task_root, layer_root]
sys.stdout = sys.stderr
cpu = time.process_time
started = cpu()
import app
import_ms = (cpu() - started) * 1000
doc = {"import_ms": import_ms, "xray_at_import": "aws_xray_sdk" in sys.modules}
from agent_memory import tracing
if tracing.enabled():
    if warm:
        import botocore.session, botocore.client
    started = cpu()
    tracing.tracer()
    doc["tracer_ms"] = (cpu() - started) * 1000
    tracing._active = True
    started = cpu()
    for _ in range(100):
        with tracing.span("store.get", store="dynamodb"):
            pass
    doc["span_us"] = (cpu() - started) * 1e6 / 100
sys.__stdout__.write(json.dumps(doc) + "\\n")
"""
TRACED = {"LAMBDA_TASK_ROOT": "/var/task",
          "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad9;Sampled=1"}


def child(function: Path, layer: Path, env: dict[str, str], mode: str = "cold") -> dict:
    proc = subprocess.run([sys.executable, "-B", "-I", "-S", "-c", DRIVER, str(function), str(layer), mode],
                          capture_output=True, text=True, env={**ENV, **env}, cwd=str(function), timeout=120)
    if proc.returncode:
        raise SystemExit(f"{function.name}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def report(build: Path, runs: int) -> None:
    layer = build / "DependenciesLayer" / "python"
    print(f"python -B -I -S, median of {runs} fresh interpreters, CPU ms ({sys.executable})")
    print(f"{'':<20} {'import off':>11} {'import on':>10} {'tracer, cold':>13} {'tracer, warm':>13} {'span':>8}")
    for function in sorted(p for p in build.iterdir() if p.name.endswith("Function")):
        off = [child(function, layer, {}) for _ in range(runs)]
        cold = [child(function, layer, TRACED) for _ in range(runs)]
        warm = [child(function, layer, TRACED, "warm") for _ in range(runs)]
        assert not any(r["xray_at_import"] for r in off + cold), f"{function.name} imports aws_xray_sdk at init"

        def med(rows: list[dict], key: str) -> float:
            return statistics.median(r[key] for r in rows)

        print(f"{function.name:<20} {med(off, 'import_ms'):>8.0f} ms {med(cold, 'import_ms'):>7.0f} ms "
              f"{med(cold, 'tracer_ms'):>10.0f} ms {med(warm, 'tracer_ms'):>10.0f} ms {med(warm, 'span_us'):>5.0f} us")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sam", help="the sam CLI (default: $SAM, .venv-tools/bin/sam, then PATH)")
    parser.add_argument("--build-dir", type=Path, help="measure this existing build instead of a fresh one")
    args = parser.parse_args()
    if args.build_dir:
        if not (args.build_dir / "DependenciesLayer" / "python").exists():
            print(f"no build in {args.build_dir}: run `make sam-build` first", file=sys.stderr)
            return 2
        report(args.build_dir, args.runs)
        return 0
    with tempfile.TemporaryDirectory(prefix="agent-memory-build-") as tmp:
        sam_build(sam_path(args.sam), Path(tmp) / "build")
        report(Path(tmp) / "build", args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
