"""SDK behaviour over real HTTP: idempotency keys reused across its own retries, bounded
retries of 503 thread_projection_pending honouring Retry-After, text downloads eight at a
time, and the 16 MiB context byte budget."""

from __future__ import annotations

import threading

import httpx
import pytest

from agent_memory.client import AgentMemoryError, ApiError, Memory

T = "t-sdk"


class LoseFirstReply(httpx.BaseTransport):
    """Delivers the first append to the server, then drops its reply (a network failure
    after the server committed): the SDK's retry must not create a second turn."""

    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.keys: list[str] = []
        self.dropped = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/turns"):
            self.keys.append(request.headers["idempotency-key"])
            if not self.dropped:
                self.dropped = True
                response.read()
                raise httpx.ReadError("connection reset", request=request)
        return response


class CountingTransport(httpx.BaseTransport):
    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.lock = threading.Lock()
        self.in_flight = self.peak = 0
        self.turn_gets = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        downloading = request.method == "GET" and "/turns/" in request.url.path
        with self.lock:
            self.turn_gets += downloading
            self.in_flight += downloading
            self.peak = max(self.peak, self.in_flight)
        try:
            response = self.inner.handle_request(request)
            response.read()
            return response
        finally:
            with self.lock:
                self.in_flight -= downloading


def test_append_reuses_its_generated_key_across_its_own_retries(sdk):
    transport = LoseFirstReply()
    client = sdk(http_transport=transport)
    ref = client.append_thread(T, "Sign-in still fails.")
    assert len(transport.keys) == 2 and transport.keys[0] == transport.keys[1]
    assert ref.replayed and ref.turn_index == 1
    assert [t["text"] for t in client.list_thread_turns(T)] == ["Sign-in still fails."]
    # a fresh call is a fresh logical turn, with a fresh key
    assert client.append_thread(T, "Sign-in still fails.").turn_index == 2
    assert transport.keys[2] != transport.keys[0]


def test_caller_owned_key_resumes_the_same_logical_append(sdk):
    first = sdk().append_thread(T, "durable message", idempotency_key="worker-7-msg-1")
    resumed = sdk().append_thread(T, "durable message", idempotency_key="worker-7-msg-1")  # another process
    assert resumed.turn_id == first.turn_id and resumed.replayed
    with pytest.raises(ApiError) as err:
        sdk().append_thread(T, "another message", idempotency_key="worker-7-msg-1")
    assert err.value.status == 409


def test_context_retries_projection_pending_within_its_budget(sdk, runtime):
    client = sdk()
    for i in range(4):
        client.append_thread(T, f"turn {i}")
    runtime.projector.pause()
    client.append_thread(T, "latest, not yet searchable")
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the projector catches up while the SDK waits
        slept.append(seconds)
        runtime.projector.resume()

    items = sdk(sleep=sleep).thread_context(T, "turn", last_n_turns=2)
    assert slept == [1.0]  # honoured the server's Retry-After
    assert [i.origin for i in items][:2] == ["recent", "recent"] and items[1].text == "latest, not yet searchable"


def test_context_gives_up_when_retry_after_exceeds_the_budget(sdk, runtime):
    client = sdk()
    for i in range(3):
        client.append_thread(T, f"turn {i}")
    runtime.projector.pause()
    try:
        client.append_thread(T, "pending")
        slept: list[float] = []
        with pytest.raises(ApiError) as err:
            sdk(retry_budget_s=0.5, sleep=slept.append).thread_context(T, "turn", last_n_turns=1)
        assert err.value.status == 503 and err.value.code == "thread_projection_pending"
        assert err.value.retry_after == 1.0 and slept == []
        with pytest.raises(ApiError):
            sdk(max_retries=2, sleep=slept.append).thread_context(T, "turn", last_n_turns=1)
        assert slept == [1.0, 1.0]  # bounded by max_retries
        assert isinstance(err.value, AgentMemoryError)
    finally:
        runtime.projector.resume()


def test_helper_append_is_tenant_visible_and_raw_append_carries_readers(sdk):
    Memory("customer-42", client=sdk("alice")).thread(T).append("helper turn", {"speaker": "customer"})
    sdk("alice").append_thread(T, "support only", acl_readers=["group:support"])
    bob = Memory("customer-42", client=sdk("bob")).thread(T)
    assert [i.text for i in bob.context("turn")] == ["helper turn"]
    assert [i.text for i in Memory(None, client=sdk("alice")).thread(T).context("turn")] == [
        "helper turn", "support only"]


def test_non_inline_items_are_downloaded_eight_at_a_time(sdk):
    client = sdk()
    big = "x" * 900_000
    for i in range(3):  # two fit the server's 2 MiB inline budget, the third does not
        client.append_thread(T, f"{i}{big}")
    for i in range(12):
        client.append_thread(T, f"short {i}")
    raw = httpx.post(f"{client._transport._http.base_url}/api/v1/acme/threads/{T}/context",
                     json={"query": "x", "last_n_turns": 15},
                     headers=dict(client._transport._http.headers)).json()["items"]
    assert [i["textInline"] for i in raw[:3]] == [True, True, False]
    assert raw[2]["text"] is None and raw[2]["textBytes"] == 900_001
    assert all(i["textInline"] for i in raw[3:])
    counting = CountingTransport()
    items = sdk(http_transport=counting).thread_context(T, "x", last_n_turns=15)
    assert [i.turn_index for i in items] == list(range(1, 16))
    assert items[2].text == f"2{big}"
    assert counting.turn_gets == 1 and counting.peak <= 8


def test_context_byte_budget_stops_scheduling_and_raises(sdk):
    client = sdk()
    for i in range(20):
        client.append_thread(T, f"{i:02d}" + "y" * 98)  # 100 bytes each
    counting = CountingTransport()
    small = sdk(http_transport=counting, context_byte_budget=1000)
    with pytest.raises(AgentMemoryError) as err:
        small.thread_context(T, "y", last_n_turns=20)
    assert not isinstance(err.value, ApiError) and "budget" in str(err.value)
    assert len(sdk(context_byte_budget=2000).thread_context(T, "y", last_n_turns=20)) == 20  # exactly the budget


def test_sixteen_mib_budget_across_recent_and_downloaded_turns(sdk, store_kind):
    if store_kind == "dynamodb":
        pytest.skip("17 MiB through moto is slow; the budget logic is store-independent")
    client = sdk()
    mib = "z" * (1024 * 1024 - 8)
    for i in range(17):
        client.append_thread(T, f"{i:02d}" + mib)
    counting = CountingTransport()
    with pytest.raises(AgentMemoryError, match="budget"):
        sdk(http_transport=counting).thread_context(T, "z", last_n_turns=17)
    # 2 inline + 6 downloaded in batch 1, 8 downloaded in batch 2, then 17 MiB crosses 16 MiB in
    # batch 3 (one more download); nothing after it is scheduled
    assert counting.turn_gets == 15 and counting.peak <= 8
    assert len(sdk(context_byte_budget=18 * 1024 * 1024).thread_context(T, "z", last_n_turns=17)) == 17
