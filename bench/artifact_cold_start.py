"""Figures of the built stack (run `make sam-build` first, or `make bench-artifact`).

Usage: python bench/artifact_cold_start.py [--runs N]
Prints the dependencies layer's size (unzipped, as Lambda counts it against the 250 MB
limit), each function artifact's size, and each function's cold import: the median wall
and CPU time of importing its handler in a fresh ``python -I -S`` interpreter whose path is only
the artifact (``/var/task``), the layer (``/opt/python``) and the standard library, as in
tests/deploy/lambda_harness.py. Lambda adds its own runtime start on top of these figures.
The CPU figure is the one to compare across runs: other load on the machine inflates wall
time far more than CPU time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / ".aws-sam" / "build"
HARNESS = REPO / "tests" / "deploy" / "lambda_harness.py"


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def cold_import_ms(function: Path, layer: Path) -> tuple[float, float]:
    proc = subprocess.run([sys.executable, "-I", "-S", str(HARNESS), str(function), str(layer)], input='"done"\n',
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=120)
    first = json.loads(proc.stdout.splitlines()[0])
    if "import_ms" not in first:
        raise SystemExit(f"{function.name}: {first.get('import_error')}")
    return first["import_ms"], first["import_cpu_ms"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    layer = BUILD / "DependenciesLayer" / "python"
    if not layer.exists():
        print("no build: run `make sam-build` first", file=sys.stderr)
        return 2
    print(f"dependencies layer: {size_mb(layer.parent):.1f} MB unzipped")
    print(f"cold import, median of {args.runs} runs")
    print(f"{'function':<22} {'artifact':>10} {'wall':>9} {'cpu':>9}")
    for function in sorted(p for p in BUILD.iterdir() if p.name.endswith("Function")):
        runs = [cold_import_ms(function, layer) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{function.name:<22} {size_mb(function) * 1000:>8.1f}kB {wall:>6.0f} ms {cpu:>6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
