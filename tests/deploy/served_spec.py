"""The copy of openapi.yaml the service serves (``GET /api/v1/openapi.json`` and ``.yaml``):
``shared/agent_memory/http/openapi.json``, in the package because a deployed function has the
layer and its own folder, never the repo root. openapi.yaml stays the one source; this writes
the copy (``python tests/deploy/served_spec.py --write``, part of ``make generate-deploy``) and
tests/deploy/test_served_spec.py fails when it is stale. After a merge that touched
openapi.yaml, run it again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "openapi.yaml"
COPY = REPO / "shared" / "agent_memory" / "http" / "openapi.json"


def render() -> str:
    # Compact, one line: a merge conflict in it is settled by running --write again.
    return json.dumps(yaml.safe_load(SPEC.read_text(encoding="utf-8")), ensure_ascii=False,
                      separators=(",", ":")) + "\n"


def stale() -> bool:
    return not COPY.exists() or COPY.read_text(encoding="utf-8") != render()


if __name__ == "__main__":
    if "--write" in sys.argv:
        if stale():
            COPY.write_text(render(), encoding="utf-8")
            print(f"{COPY.relative_to(REPO)} updated")
        else:
            print(f"{COPY.relative_to(REPO)} already current")
    else:
        sys.exit(1 if stale() else 0)
