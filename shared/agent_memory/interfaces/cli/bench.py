"""``agent-memory bench locomo``: benchmarks, loaded from ``bench/`` of a checkout."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub) -> None:
    bench = sub.add_parser("bench", help="benchmarks (from a checkout: they live in bench/)")
    bench_sub = bench.add_subparsers(dest="bench", required=True, title="commands", metavar="COMMAND")
    locomo = bench_sub.add_parser("locomo", help="LoCoMo evidence recall@k: product vs BM25, dense, RRF")
    locomo.add_argument("directory", help="directory of LoCoMo conversation files (*.json)")
    locomo.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing",
                        help="hashing (offline, default) or minilm (the semantic extra)")
    locomo.add_argument("--out", default=None, help="JSON results (default: bench/results/...)")
    locomo.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    locomo.set_defaults(func=run_locomo)


def run_locomo(args: argparse.Namespace) -> int:
    """Loads ``bench/locomo.py`` of the checkout only when asked: benchmarks are not part of
    the package a Lambda function imports."""
    import importlib.util
    from pathlib import Path

    from agent_memory.cfn_template import repo_root

    path = repo_root() / "bench" / "locomo.py"
    if not path.exists():
        print(f"agent-memory: {path} not found; run from a checkout of the repository", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location("agent_memory_bench_locomo", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    args.directory = Path(args.directory)
    args.out = Path(args.out) if args.out else None
    return module.run_command(args)
