"""Cold-start figure: import time of each function's module in a fresh interpreter.

Usage: python bench/cold_start.py [--runs N]
Prints, per function, the median wall time of ``import functions.<area>.app`` over N fresh
interpreters, and which heavy libraries the import pulled in. Target: <= 300 ms for every
function that does not call a model (openai, opensearchpy imported lazily).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ["boto3", "botocore", "openai", "opensearchpy", "numpy", "sentence_transformers", "torch"]

PROBE = """
import importlib.util, json, sys, time
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", {path!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
ms = (time.perf_counter() - t0) * 1000
print(json.dumps({{"ms": ms, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def measure(app: Path, runs: int) -> tuple[float, list[str]]:
    times, heavy = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-X", "frozen_modules=on", "-c",
                              PROBE.format(path=str(app), heavy=HEAVY)],
                             capture_output=True, text=True, check=True, cwd=REPO)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(row["ms"])
        heavy = row["heavy"]
    return statistics.median(times), heavy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'function':<12} {'import ms (median of ' + str(args.runs) + ')':>26}  heavy modules loaded")
    for app in sorted((REPO / "functions").glob("*/app.py")):
        ms, heavy = measure(app, args.runs)
        print(f"{app.parent.name:<12} {ms:>26.1f}  {', '.join(heavy) or '-'}")


if __name__ == "__main__":
    main()
