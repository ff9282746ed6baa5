"""The HTTP contract, byte for byte: a fixed scenario touching every route family runs
in process (as API Gateway invokes the functions) on SQLite with the offline model, and
each response's status, content type and body must equal the recorded baseline.

Only what differs between two runs of the same code is masked: record ids, the clock's
timestamps, cursors, request ids and measured durations. Everything else (field order,
spacing, casing, status codes, problem documents) must stay as recorded, so a refactor that
changes the wire fails here. After an intended wire change, re-record with
``AGENT_MEMORY_RECORD_BASELINE=1 pytest tests/contract/test_response_baseline.py`` and
review the diff of ``response_baseline.json``.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

BASELINE = Path(__file__).with_name("response_baseline.json")
RECORD_ENV = "AGENT_MEMORY_RECORD_BASELINE"
CTX = "/api/v1/baseline"
FIXED_TIMES = {"2026-01-05T09:00:00Z", "2026-02-01T10:00:00Z"}

_ID = re.compile(r"\b(?:turn|sess|attr|rel|act|instr|unc|doc|chunk|trace|thr|tturn|key|cache|audit|rcpt)_[0-9a-z]{26}\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
_DURATION = re.compile(r'("(?:[a-zA-Z]*(?:Ms|_ms|Seconds|_seconds))"\s*:\s*)-?\d+(?:\.\d+)?')
_CURSOR = re.compile(r'("(?:nextCursor|next_cursor|cursor)"\s*:\s*)"[^"]*"')
_REQUEST_ID = re.compile(r'("(?:requestId|request_id)"\s*:\s*)"[^"]*"')
# An audit decision's traceId is its request's id (an erasure receipt's row, say): drawn per request.
_REQUEST_TRACE = re.compile(r'("traceId"\s*:\s*)"[0-9a-f]{32}"')
# A write without observedAt is dated today, and a context block's fence nonce is drawn
# from the block's text: both follow the day the scenario runs on. The nonce opens and closes
# the block, so both lines are masked, as one numbered value that must still match.
_FENCE = re.compile(r"(<<<MEMORY |MEMORY )([0-9a-f]{8})\b(>>>)?")


class Masker:
    """Replaces volatile values by stable placeholders, numbered by first appearance, so a
    value that repeats (an id returned, then cited) still has to repeat."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        today = datetime.now(UTC).date()
        # the scenario may cross midnight: yesterday and today are both "the day it runs"
        days = "|".join(str(today + timedelta(days=n)) for n in (-1, 0, 1))
        self._today = re.compile(rf"\b(?:{days})\b")

    def _token(self, kind: str, value: str) -> str:
        if value not in self.seen:
            self.seen[value] = f"<{kind}:{sum(1 for v in self.seen.values() if v.startswith('<' + kind + ':'))}>"
        return self.seen[value]

    def __call__(self, text: str) -> str:
        text = _CURSOR.sub(lambda m: m.group(1) + '"<cursor>"', text)
        text = _REQUEST_ID.sub(lambda m: m.group(1) + '"<request-id>"', text)
        text = _REQUEST_TRACE.sub(lambda m: m.group(1) + '"<request-id>"', text)
        text = _DURATION.sub(lambda m: m.group(1) + "<duration>", text)
        text = _ID.sub(lambda m: self._token(m.group(0).split("_")[0], m.group(0)), text)
        text = _FENCE.sub(lambda m: m.group(1) + self._token("fence", m.group(2)) + (m.group(3) or ""), text)
        # clock times are masked without numbering: two records may or may not share a tick
        text = _TIME.sub(lambda m: m.group(0) if m.group(0) in FIXED_TIMES else "<time>", text)
        return self._today.sub("<today>", text)


def _scenario(api: Any) -> list[dict[str, Any]]:
    mask = Masker()
    out: list[dict[str, Any]] = []

    def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             raw: bytes | None = None) -> Any:
        resp = api.request(method, path, body, headers=headers, raw=raw)
        out.append({"request": f"{method} {mask(path)}", "status": resp.status,
                    "content-type": resp.headers.get("content-type"), "body": mask(resp.text)})
        try:
            return resp.json()
        except ValueError:
            return None

    call("GET", "/api/v1/health")
    session = call("POST", f"{CTX}/sessions", {"scopes": ["org/acme/user/alice"], "labels": ["baseline"]})
    sid = session["id"]
    call("POST", f"{CTX}/facts", {"text": "I live in London and I work at Initech.", "sessionId": sid,
                                   "observedAt": "2026-01-05T09:00:00Z"})
    call("POST", f"{CTX}/facts", {"text": "I moved to Berlin. My favourite colour is green.", "sessionId": sid,
                                   "observedAt": "2026-02-01T10:00:00Z"})
    call("POST", f"{CTX}/facts", {"text": "The deploy window is Friday.", "infer": "none",
                                   "speaker": {"name": "Ops bot"}})
    call("POST", f"{CTX}/facts/batch", {"messages": [
        {"role": "user", "content": "I adopted a dog called Biscuit."},
        {"role": "assistant", "content": "Lovely, how old is Biscuit?"},
        {"role": "user", "content": "Biscuit is two. I might switch to decaf coffee, not sure yet."}],
        "sessionId": sid})
    call("GET", f"{CTX}/sessions")
    call("GET", f"{CTX}/sessions/{sid}/turns")
    call("POST", f"{CTX}/sessions/{sid}/context", {"query": "where do I live?"})
    call("GET", f"{CTX}/state")
    call("GET", f"{CTX}/profile")
    entities = call("GET", f"{CTX}/entities")
    call("GET", f"{CTX}/attributes")
    call("GET", f"{CTX}/relations")
    call("GET", f"{CTX}/actions")
    call("GET", f"{CTX}/instructions")
    uncertainty = call("GET", f"{CTX}/uncertainty")
    for item in (entities or {}).get("entities", [])[:2]:
        etype, _, name = item["id"].removeprefix("entity:").partition("/")
        call("GET", f"{CTX}/entities/{etype}/{name}")
        call("GET", f"{CTX}/entities/{etype}/{name}/history")
    call("GET", f"{CTX}/entities/person/nobody-here")
    call("GET", f"{CTX}/inspect?ref=attribute:person/user/location")
    call("GET", f"{CTX}/inspect?ref=entity:person/user&asOf=2026-01-20T00:00:00Z")
    call("GET", f"{CTX}/inspect?ref=relation:person/user/knows/person")
    for item in (uncertainty or {}).get("items", [])[:1]:
        call("POST", f"{CTX}/uncertainty/{item['id']}/resolve", {"acceptedValue": "decaf", "note": "confirmed"})
    call("POST", f"{CTX}/query", {"query": "Where does the user live?", "k": 5})
    call("POST", f"{CTX}/query", {"query": "where did I live", "asOf": "2026-01-20T00:00:00Z", "mode": "hybrid"})
    call("POST", f"{CTX}/context", {"query": "What is my dog's name?", "k": 5})
    chat = call("POST", f"{CTX}/chat", {"message": "Where do I live now?", "sessionId": sid})
    call("POST", f"{CTX}/chat", {"message": "What is my dog called?", "sessionId": sid, "stream": True})
    if isinstance(chat, dict) and chat.get("traceId"):
        call("GET", f"{CTX}/traces/{chat['traceId']}")
    call("GET", f"{CTX}/traces?limit=5")
    call("GET", f"{CTX}/traces/stats")
    call("GET", f"{CTX}/traces/stats?windowHours=0")
    call("POST", f"{CTX}/sessions/{sid}/close")

    call("POST", f"{CTX}/threads/support-1/turns", {"text": "My order 1234 arrived broken.",
                                                     "entityId": "customer-7", "idempotencyKey": "k-1"})
    call("POST", f"{CTX}/threads/support-1/turns", {"text": "My order 1234 arrived broken.",
                                                     "entityId": "customer-7", "idempotencyKey": "k-1"})
    call("POST", f"{CTX}/threads/support-1/turns", {"text": "Sorry to hear that, a refund is on its way."})
    call("GET", f"{CTX}/threads")
    call("GET", f"{CTX}/threads/support-1")
    call("GET", f"{CTX}/threads/support-1/turns")
    call("GET", f"{CTX}/threads/support-1/turns/1")
    call("POST", f"{CTX}/threads/support-1/context", {"query": "what happened to the order?", "lastNTurns": 2})
    call("PUT", f"{CTX}/threads/support-1/acl", {"aclReaders": ["agent/support"]})
    call("GET", f"{CTX}/threads/missing-thread")

    doc = call("POST", f"{CTX}/documents", {"text": "# Returns\n\nItems can be returned within 30 days.\n\n"
                                                     "# Shipping\n\nShipping takes three working days.",
                                             "title": "Policy", "format": "markdown"})
    doc_id = (doc or {}).get("id")
    if doc_id:
        for _ in range(200):  # ingestion runs on the local worker; wait for a settled status
            state = api.request("GET", f"{CTX}/documents/{doc_id}").json()
            if state.get("status") in ("ready", "failed"):
                break
            time.sleep(0.05)
        call("GET", f"{CTX}/documents/{doc_id}")
        call("GET", f"{CTX}/documents/{doc_id}/chunks")
        call("GET", f"{CTX}/documents")
        call("POST", f"{CTX}/query", {"query": "how long does shipping take", "k": 3})
        call("POST", f"{CTX}/documents/query", {"query": "how long does shipping take", "k": 3,
                                                "expandGraph": True, "filter": {"format": "markdown"}})
        call("GET", f"{CTX}/documents/keywords?page_size=5")
        call("GET", f"{CTX}/documents/keywords/shipping")
        call("POST", f"{CTX}/documents/keywords/search", {"query": "shipping days"})
        call("GET", f"{CTX}/documents/{doc_id}/keywords")
        call("POST", f"{CTX}/documents/recompute-links")
        call("PUT", f"{CTX}/documents/{doc_id}")  # reprocess: the same text, every chunk carried over
        for _ in range(200):
            if api.request("GET", f"{CTX}/documents/{doc_id}").json().get("status") in ("ready", "failed"):
                break
            time.sleep(0.05)
        call("GET", f"{CTX}/documents/{doc_id}")
        call("DELETE", f"{CTX}/documents/{doc_id}")
    call("GET", "/api/v1/contexts")
    call("GET", f"{CTX}/audit")

    # problem documents
    call("POST", f"{CTX}/facts", {"text": ""})
    call("POST", f"{CTX}/facts", raw=b"{not json")
    call("POST", f"{CTX}/facts", {"text": "x", "infer": "sometimes"})
    call("POST", f"{CTX}/query", {"query": "x", "k": 0})
    call("POST", "/api/v1/bad%20ctx!/facts", {"text": "x"})
    call("GET", f"{CTX}/sessions/sess_00000000000000000000000000/turns")
    call("POST", f"{CTX}/forget", {"query": "Biscuit", "dryRun": True})
    call("POST", f"{CTX}/forget", {"query": "Biscuit"})
    call("DELETE", f"{CTX}/sessions/{sid}")
    call("GET", f"{CTX}/sessions")
    return out


@pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)
def test_responses_match_recorded_baseline(api: Any) -> None:
    responses = _scenario(api)
    if os.environ.get(RECORD_ENV) == "1":
        BASELINE.write_text(json.dumps(responses, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        pytest.skip(f"recorded {len(responses)} responses to {BASELINE.name}")
    recorded = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert [r["request"] for r in responses] == [r["request"] for r in recorded]
    for got, want in zip(responses, recorded, strict=True):
        assert got == want, f"{want['request']} changed on the wire"
