"""README.md's route table ("What it serves"), generated: every method and path of
openapi.yaml, grouped by the function template.yaml routes it to, so the table cannot leave a
route out. ``python tests/deploy/route_table.py --write`` rewrites the block between the
``<!-- routes -->`` markers (part of ``make generate-deploy``; run it again after a merge that
adds routes); tests/deploy/test_route_table.py fails when the README differs."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "shared"))

from agent_memory.cfn_template import function_routes, load_template  # noqa: E402

README = REPO / "README.md"
BEGIN, END = "<!-- routes -->", "<!-- /routes -->"
PREFIX = "/api/v1/{context_id}"
METHODS = ("get", "post", "put", "patch", "delete")
# The functions no route reaches, and what drives them.
WORKERS = {
    "projector": "DynamoDB stream -> search index (retries, then the dead-letter queue)",
    "ingestion": "SQS document jobs -> chunks and document facts (partial batch failures, then its dead-letter queue)",
    "audit": "the API functions' cost lines (a log subscription) -> audit rows",
}


def rows() -> list[tuple[str, list[tuple[str, str]]]]:
    """(area, [(method, path)]) in template order, each area's routes in openapi.yaml's order."""
    spec = yaml.safe_load((REPO / "openapi.yaml").read_text(encoding="utf-8"))
    wired = function_routes(load_template(REPO / "template.yaml"))
    order = [(m.upper(), path) for path, item in spec["paths"].items() for m in METHODS if m in item]
    missing = sorted(set(order) - set(wired))
    if missing:
        raise SystemExit(f"openapi.yaml routes no function serves: {missing}")
    areas: dict[str, list[tuple[str, str]]] = {}
    for handler in wired.values():
        areas.setdefault(handler.split("/")[1], [])
    for method, path in order:
        areas[wired[(method, path)].split("/")[1]].append((method, path))
    return list(areas.items())


def _cell(routes: list[tuple[str, str]]) -> str:
    """``GET``/``POST /sessions``: the methods of one path together, the context prefix left off."""
    by_path: dict[str, list[str]] = {}
    for method, path in routes:
        by_path.setdefault(path, []).append(method)
    parts = []
    for path, methods in by_path.items():
        short = path[len(PREFIX):] or "/" if path.startswith(PREFIX) else path
        parts.append("/".join(f"`{m}" + ("`" if i < len(methods) - 1 else f" {short}`")
                              for i, m in enumerate(methods)))
    return "; ".join(parts)


def render() -> str:
    lines = [BEGIN, f"| area (`functions/`) | routes (under `{PREFIX}` unless they start `/api/v1/`) |", "|---|---|"]
    lines += [f"| {area} | {_cell(routes)} |" for area, routes in rows()]
    lines += [f"| {area} | no route: {what} |" for area, what in WORKERS.items()]
    return "\n".join([*lines, END])


def current() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index(BEGIN):text.index(END) + len(END)]


if __name__ == "__main__":
    if "--write" in sys.argv:
        text = README.read_text(encoding="utf-8")
        README.write_text(text.replace(current(), render()), encoding="utf-8")
        print("README.md route table written")
    else:
        sys.exit(0 if current() == render() else 1)
