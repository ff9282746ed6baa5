"""Reading memory, end to end through the local server (not a test; the tests are in
tests/http/test_memory_reads.py, test_memory_paging.py and test_forget.py).

Usage: python bench/reads_demo.py [--store sqlite|dynamodb|both]      (default: both)

For each store it starts the local HTTP server on a free loopback port (SQLite + embedded
search in a temporary directory, or DynamoDB under moto's in-process mock with the table
built from template.yaml; offline models either way) and, over HTTP:

1. temporal reads: London observed in March, Berlin observed in May; ``asOf`` April ->
   London, current -> Berlin, history -> both, linked both ways;
2. the /state shape (docs/decisions.md, "State and diffs") and /profile;
3. paging: ``/entities?type=project&limit=3`` across several pages while writes land
   between pages (one before the cursor, one after): nothing skipped, nothing repeated;
4. forget: ``dryRun``, a soft forget (history before it stays), then ``purge`` (the chain
   goes from the store too), and what /state, history and ``asOf`` show after each.

Exits non-zero when an expectation fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx

REPO = Path(__file__).resolve().parents[1]
C = "/api/v1/demo"


def check(ok: bool, what: str) -> None:
    print(f"    [{'ok' if ok else 'FAIL'}] {what}")
    if not ok:
        raise SystemExit(f"expectation failed: {what}")


@contextlib.contextmanager
def local_server(store: str, data_dir: Path) -> Iterator[str]:
    from agent_memory.config import load_settings
    from agent_memory.http.local_server import make_server
    from agent_memory.runtime import Runtime, set_runtime

    env = {"AGENT_MEMORY_DATA_DIR": str(data_dir), "AGENT_MEMORY_STORE": store, "AWS_REGION": "us-east-1",
           "AGENT_MEMORY_TABLE": "agent-memory-demo", "AGENT_MEMORY_CURSOR_SECRET": "demo-secret"}
    settings = load_settings(env=env)
    with contextlib.ExitStack() as stack:
        if store == "dynamodb":
            import boto3
            from moto import mock_aws
            from moto.core.botocore_stubber import BotocoreStubber

            from agent_memory.adapters.dynamodb_table import create_table_from_template

            for var, value in (("AWS_ACCESS_KEY_ID", "demo"), ("AWS_SECRET_ACCESS_KEY", "demo"),
                               ("AWS_DEFAULT_REGION", "us-east-1")):
                os.environ.setdefault(var, value)
            # moto applies one request in several unlocked steps; DynamoDB applies each
            # atomically. Serialise requests inside moto (as tests/conftest.py does).
            lock, original = threading.Lock(), BotocoreStubber.process_request

            def one_at_a_time(self, request):
                with lock:
                    return original(self, request)

            BotocoreStubber.process_request = one_at_a_time
            stack.callback(setattr, BotocoreStubber, "process_request", original)
            stack.enter_context(mock_aws())
            create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), settings.table_name)
        runtime = Runtime(settings)
        set_runtime(runtime)
        stack.callback(set_runtime, None)
        server = make_server("127.0.0.1", 0, REPO)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        stack.callback(server.server_close)
        stack.callback(server.shutdown)
        yield f"http://127.0.0.1:{server.server_port}"


class Api:
    def __init__(self, client: httpx.Client):
        self.client = client

    def get(self, path: str, status: int = 200) -> dict:
        r = self.client.get(f"{C}{path}")
        if r.status_code != status:
            raise SystemExit(f"GET {path}: {r.status_code} {r.text}")
        return r.json() if r.text else {}

    def post(self, path: str, body: dict, status: int = 200) -> dict:
        r = self.client.post(f"{C}{path}", json=body)
        if r.status_code != status:
            raise SystemExit(f"POST {path}: {r.status_code} {r.text}")
        return r.json() if r.text else {}


def temporal(api: Api) -> None:
    print("1. temporal reads")
    api.post("/facts", {"text": "I live in London.", "observed_at": "2026-03-10T10:00:00Z"})
    moved = api.post("/facts", {"text": "I moved to Berlin.", "observed_at": "2026-05-10T10:00:00Z"})
    print(f"    POST /facts 'I moved to Berlin.' corrections={moved['extraction']['corrections']}")
    april = api.get("/entities/person/user?asOf=2026-04-15T00:00:00Z")["attributes"]
    now = api.get("/entities/person/user")["attributes"]
    history = api.get("/entities/person/user/history/location")["history"]
    print(f"    asOf 2026-04-15 -> {[a['value'] for a in april]}; current -> {[a['value'] for a in now]}")
    for h in history:
        print(f"    history {h['id']} {h['value']:7} validFrom={h['validFrom']} validUntil={h['validUntil']} "
              f"supersedes={h['supersedes']} supersededBy={h['supersededBy']}")
    check([a["value"] for a in april] == ["London"], "asOf April is London")
    check([a["value"] for a in now] == ["Berlin"], "current is Berlin")
    london, berlin = history
    check(london["supersededBy"] == berlin["id"] and berlin["supersedes"] == london["id"],
          "history is London -> Berlin, linked both ways")


def state_shape(api: Api) -> None:
    print("2. /state and /profile")
    api.post("/facts", {"text": "I like sushi. My sister Emma lives in Oslo. Always answer in German."})
    api.post("/facts", {"text": "I think I work at Globex."})
    api.post("/facts", {"text": "I ran a marathon yesterday."})
    state = api.get("/state?limit=100")
    for cat in ("identity", "knowledge", "context"):
        counts = {t: len(state[cat][t]) for t in ("entities", "attributes", "relations", "actions")}
        print(f"    {cat:9} {counts}")
    print(f"    instructions={[i['description'] for i in state['instructions']]}")
    print(f"    unknowns={[u['about'] for u in state['unknowns']]}")
    print(f"    truncated={state['truncated']}")
    sample = state["identity"]["attributes"][0]
    print(f"    an attribute: {json.dumps(sample)}")
    check(set(state) == {"identity", "knowledge", "context", "instructions", "unknowns", "truncated"},
          "top-level keys as the spec")
    small = api.get("/state?limit=1")
    check(small["truncated"]["attributes"] and small["truncated"]["entities"], "limit=1 flags truncation")
    check(api.client.get(f"{C}/state?limit=501").status_code == 400, "limit 501 -> 400")
    profile = api.get("/profile")
    print(f"    profile selfFacts={[(e['key'], e['value']) for e in profile['selfFacts']]}")
    print(f"    profile dynamic={[(e['entity'], e['key'], e['value']) for e in profile['dynamic']]}")
    check(all(e["entity"] == "entity:person/user" for e in profile["selfFacts"])
          and not [e for e in profile["selfFacts"] if e["value"] == "Oslo"], "Emma's Oslo is not a self fact")


def paging(api: Api) -> None:
    print("3. paging with writes between pages")
    names = [f"P{i}" for i in (1, 3, 5, 7, 9, 11, 13, 15, 17)]
    api.post("/facts", {"text": "import", "infer": "triples",
                        "triples": [{"entity": {"type": "project", "name": n}} for n in names]})
    before = {f"entity:project/{n.lower()}" for n in names}
    inserts = iter([("P0", "P99"), ("P10", "P98"), ("P2", "P97"), ("P4", "P96")])
    url, seen, page = "/entities?type=project&limit=3", [], 0
    while True:
        body = api.get(url)
        page += 1
        ids = [e["id"].removeprefix("entity:project/") for e in body["items"]]
        seen += body["items"]
        print(f"    page {page}: {ids} hasMore={body['page']['hasMore']}")
        if not body["page"]["hasMore"]:
            break
        pair = next(inserts, None)
        if pair:
            api.post("/facts", {"text": "import", "infer": "triples",
                                "triples": [{"entity": {"type": "project", "name": n}} for n in pair]})
            print(f"      (wrote {pair[0]} before the cursor and {pair[1]} after it)")
        url = f"/entities?type=project&limit=3&cursor={quote(body['page']['nextCursor'])}"
    got = [e["id"] for e in seen]
    check(len(got) == len(set(got)), f"nothing repeated ({len(got)} items over {page} pages)")
    check(before <= set(got), "nothing that existed before the walk was skipped")
    check(api.client.get(f"{C}/entities?cursor=forged").status_code == 400, "a bad cursor is a 400")


def forget(api: Api) -> None:
    print("4. forget")
    dry = api.post("/forget", {"query": "location Berlin", "limit": 1, "dryRun": True})
    print(f"    dryRun -> deleted={dry['deleted']} items={[(i['kind'], i['text'], i['score']) for i in dry['items']]}")
    check(dry["deleted"] == 0 and api.get("/entities/person/user/history/location")["history"][-1]["value"]
          == "Berlin", "dryRun deletes nothing")
    soft = api.post("/forget", {"query": "location Berlin", "limit": 1})
    print(f"    forget -> deleted={soft['deleted']} items={[(i['kind'], i['text']) for i in soft['items']]}")
    history = [h["value"] for h in api.get("/entities/person/user/history/location")["history"]]
    april = [a["value"] for a in api.get("/entities/person/user?asOf=2026-04-15T00:00:00Z")["attributes"]]
    current = [a["value"] for a in api.get("/attributes?entity=person/user&key=location")["items"]]
    print(f"    after forget: current={current} history={history} asOf April={april}")
    check(current == [] and history == ["London"] and april == ["London"],
          "Berlin is gone; the superseded London history stays")
    api.post("/facts", {"text": "I moved to Paris.", "observed_at": "2026-06-10T10:00:00Z"})
    purge = api.post("/forget", {"query": "location Paris", "limit": 1, "purge": True})
    print(f"    forget purge -> deleted={purge['deleted']} items={[(i['kind'], i['text']) for i in purge['items']]}")
    history = [h["value"] for h in api.get("/entities/person/user/history/location")["history"]]
    april = [a["value"] for a in api.get("/entities/person/user?asOf=2026-04-15T00:00:00Z")["attributes"]]
    print(f"    after purge: history={history} asOf April={april}")
    check(history == [] and april == [], "purge removed the fact and its history")
    values = {a["value"] for c in ("identity", "knowledge", "context")
              for a in api.get("/state")[c]["attributes"]}
    print(f"    /state attribute values now: {sorted(values)}")
    check(not values & {"London", "Berlin", "Paris"}, "nothing forgotten comes back through /state")


def run(store: str) -> None:
    print(f"=== store: {store} ===")
    with tempfile.TemporaryDirectory() as tmp, local_server(store, Path(tmp) / "data") as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        api = Api(client)
        temporal(api)
        state_shape(api)
        paging(api)
        forget(api)
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["sqlite", "dynamodb", "both"], default="both")
    args = parser.parse_args(argv)
    for store in (["sqlite", "dynamodb"] if args.store == "both" else [args.store]):
        run(store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
