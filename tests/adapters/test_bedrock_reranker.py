"""The Bedrock reranker (``adapters.rerankers.BedrockReranker``) through a real
``bedrock-agent-runtime`` client under botocore's Stubber: the Rerank request it sends, scores
mapped back by index, and every failure (a service error, throttling, a partial answer, a
timeout) leaving retrieval's fused order with the reason in the trace."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters.rerankers import BedrockReranker
from agent_memory.config import load_settings
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.runtime import Runtime
from agent_memory.services.retrieval.retrieval_service import RetrievalService
from tests.retrieval.test_rerank import NOTES

MODEL = "amazon.rerank-v1:0"
ARN = f"arn:aws:bedrock:eu-central-1::foundation-model/{MODEL}"
ADMIN = RequestContext(context_id="acme", principal="tester", admin=True)


@pytest.fixture
def client():
    return boto3.client("bedrock-agent-runtime", region_name="eu-central-1", aws_access_key_id="x",
                        aws_secret_access_key="x")


def request(query: str, texts: list[str]) -> dict:
    return {"queries": [{"type": "TEXT", "textQuery": {"text": query}}],
            "sources": [{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}}}
                        for t in texts],
            "rerankingConfiguration": {"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
                "numberOfResults": len(texts), "modelConfiguration": {"modelArn": ARN}}}}


def test_one_rerank_call_scores_every_text_and_scores_come_back_by_index(client):
    texts = ["the ferry leaves at nine", "lunch on friday", "the ferry pass is in the wallet"]
    reranker = BedrockReranker(MODEL, region="eu-central-1", client=client)
    with Stubber(client) as stub:
        stub.add_response("rerank", {"results": [{"index": 2, "relevanceScore": 0.9},
                                                 {"index": 0, "relevanceScore": 0.5},
                                                 {"index": 1, "relevanceScore": 0.01}]},
                          request("where is my ferry pass", texts))
        scores = reranker.score("where is my ferry pass", texts)
        stub.assert_no_pending_responses()
    assert scores.tolist() == [0.5, 0.01, 0.9]
    assert reranker.name == "bedrock/amazon.rerank-v1:0" and reranker.model_arn == ARN


def test_long_texts_are_cut_and_an_empty_one_is_sent_as_a_space(client):
    reranker = BedrockReranker(MODEL, region="eu-central-1", client=client, max_chars=10)
    with Stubber(client) as stub:
        stub.add_response("rerank", {"results": [{"index": 0, "relevanceScore": 0.2},
                                                 {"index": 1, "relevanceScore": 0.1}]},
                          request("q", ["0123456789", " "]))
        assert reranker.score("q", ["0123456789abcdef", ""]).tolist() == [0.2, 0.1]


def test_a_partial_answer_or_too_many_texts_raise(client):
    reranker = BedrockReranker(MODEL, region="eu-central-1", client=client)
    with Stubber(client) as stub:
        stub.add_response("rerank", {"results": [{"index": 0, "relevanceScore": 0.2}]})
        with pytest.raises(ValueError, match="1 of 2"):
            reranker.score("q", ["a", "b"])
    with pytest.raises(ValueError, match="at most 100"):
        reranker.score("q", ["t"] * 101)
    assert reranker.score("q", []).shape == (0,)


@pytest.fixture
def written(tmp_path):
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AGENT_MEMORY_CURSOR_SECRET": "s"})
    runtime = Runtime(settings)
    for text in NOTES:
        runtime.facts.write(ADMIN, WriteFactsRequest(text=text, infer="none"))
    yield runtime
    runtime.close()


def wallet_first(params: dict) -> dict:
    texts = [s["inlineDocumentSource"]["textDocument"]["text"] for s in params["sources"]]
    return {"results": [{"index": i, "relevanceScore": 1.0 if "wallet" in t else 0.0} for i, t in enumerate(texts)]}


def test_retrieval_reranks_with_bedrock_and_keeps_the_fused_order_on_every_failure(written, client):
    plain = written.retrieval.retrieve(ADMIN, "harbour ferry", k=len(NOTES))
    assert "wallet" not in plain.hits[0].text
    reranker = BedrockReranker(MODEL, region="eu-central-1", client=client)
    service = RetrievalService(written.store, written.search, reranker)
    pool = [h.text for h in plain.hits]
    with Stubber(client) as stub:
        stub.add_response("rerank", wallet_first(request("harbour ferry", pool)), request("harbour ferry", pool))
        result = service.retrieve(ADMIN, "harbour ferry", k=2)
        assert "wallet" in result.hits[0].text
        assert result.trace["rerank"]["model"] == "bedrock/amazon.rerank-v1:0" and "failed" not in result.trace["rerank"]
        for code in ("ThrottlingException", "AccessDeniedException", "ValidationException", "ServiceQuotaExceededException"):
            stub.add_client_error("rerank", service_error_code=code, http_status_code=400)
            failed = service.retrieve(ADMIN, "harbour ferry", k=2)
            assert [h.id for h in failed.hits] == [h.id for h in plain.hits[:2]], code
            assert failed.trace["rerank"]["failed"] == code  # botocore's modelled error class
        stub.assert_no_pending_responses()
    # a slow answer: the client's read timeout, as botocore raises it
    slow = BedrockReranker(MODEL, region="eu-central-1", client=client)
    slow._client = type("Slow", (), {"meta": client.meta, "rerank": staticmethod(
        lambda **_: (_ for _ in ()).throw(ReadTimeoutError(endpoint_url="https://bedrock")))})()
    timed_out = RetrievalService(written.store, written.search, slow).retrieve(ADMIN, "harbour ferry", k=2)
    assert [h.id for h in timed_out.hits] == [h.id for h in plain.hits[:2]]
    assert timed_out.trace["rerank"]["failed"] == "ReadTimeoutError"


def test_models_reranker_bedrock_builds_the_bedrock_reranker_with_the_configured_deadline(tmp_path):
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AGENT_MEMORY_CURSOR_SECRET": "s",
                                  "AGENT_MEMORY_MODELS_RERANKER": f"bedrock/{MODEL}", "AWS_REGION": "eu-central-1",
                                  "AGENT_MEMORY_LIMITS_RERANK_TIMEOUT_S": "0.8"})
    runtime = Runtime(settings)
    try:
        reranker = runtime.reranker
        assert isinstance(reranker, BedrockReranker) and reranker.model_arn == ARN
        config = reranker._client.meta.config
        assert config.read_timeout == 0.8 and config.retries["total_max_attempts"] == 1
    finally:
        runtime.close()
    from agent_memory.kernel.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="region"):
        load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AGENT_MEMORY_MODELS_RERANKER": f"bedrock/{MODEL}"})
