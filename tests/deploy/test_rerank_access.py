"""The Rerank grant (template parameter ``RerankModel``; tests/deploy/iam_table.py), evaluated for the IAM requests one Bedrock
``Rerank`` call makes: ``bedrock:Rerank`` (no resource) and ``bedrock:InvokeModel`` on the rerank
model in the stack's region; a Cohere model also needs the AWS Marketplace subscription reads.
The built recall function's real call is evaluated in tests/deploy/test_built_artifact.py."""

from __future__ import annotations

import re
from pathlib import Path

import iam_table
import pytest
from iam_policy import Call, Stack, decide

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(REPO / "template.yaml")
ACCOUNT = "123456789012"
RETRIEVING = {"RecallFunction", "ChatFunction", "ChatStreamFunction", "FactsFunction",  # /query, /context, /chat,
              "DocumentsFunction"}  # /reflect, /documents/query


def stack(region: str, **params: str) -> Stack:
    return Stack(TEMPLATE, {"TenantId": "acme", **params}, {n: n for n in TEMPLATE["Resources"]}, {},
                 region=region, account=ACCOUNT, stand_in_attributes=True)


def rerank_statements(s: Stack, function: str = "RecallFunction") -> list:
    return [st for st in s.role_statements(iam_table.role_name(function)) if st["Sid"].startswith("Rerank")]


def rerank_calls(region: str, model: str) -> list[Call]:
    arn = f"arn:aws:bedrock:{region}::foundation-model/{model}"
    calls = [Call("bedrock:Rerank", "*", {}, "Rerank"), Call("bedrock:InvokeModel", arn, {}, f"InvokeModel {arn}")]
    if model.startswith("cohere."):
        calls += [Call("aws-marketplace:ViewSubscriptions", "*", {}, "ViewSubscriptions"),
                  Call("aws-marketplace:Subscribe", "*", {"aws-marketplace:ProductId": [iam_table.COHERE_RERANK_PRODUCT]},
                       "Subscribe to Cohere Rerank 3.5")]
    return calls


@pytest.mark.parametrize(("region", "model"), [("us-west-2", "amazon.rerank-v1:0"),
                                               ("eu-central-1", "cohere.rerank-v3-5:0")])
def test_the_rerank_call_is_allowed_and_nothing_beside_it(region, model):
    policy = rerank_statements(stack(region, RerankModel=f"bedrock/{model}"))
    for call in rerank_calls(region, model):
        assert decide(policy, call), call.why
    refused = [Call("bedrock:InvokeModel", f"arn:aws:bedrock:{region}::foundation-model/anthropic.claude-opus-4-6-v1"),
               Call("bedrock:InvokeModel", f"arn:aws:bedrock:ap-south-1::foundation-model/{model}"),
               Call("bedrock:InvokeModelWithResponseStream", f"arn:aws:bedrock:{region}::foundation-model/{model}"),
               Call("bedrock:Retrieve", "*")]
    if model.startswith("amazon."):  # a first-party model needs no Marketplace access
        refused.append(Call("aws-marketplace:Subscribe", "*", {"aws-marketplace:ProductId": ["prod-2o5bej62oxkbi"]}))
    # never a subscription to another product
    refused.append(Call("aws-marketplace:Subscribe", "*", {"aws-marketplace:ProductId": ["prod-anotherproduct"]}))
    for call in refused:
        assert decide(policy, call) is None, call


def test_only_the_retrieving_functions_get_the_grant_and_only_when_a_reranker_is_set():
    functions = [n for n, r in TEMPLATE["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    with_reranker = stack("us-east-1", SearchBackend="collection", RerankModel="bedrock/amazon.rerank-v1:0")
    assert {f for f in functions if rerank_statements(with_reranker, f)} == RETRIEVING
    without = stack("us-east-1", SearchBackend="collection")
    assert not any(rerank_statements(without, f) for f in functions)
    assert iam_table.GRANTS["Rerank"].condition == "HasReranker"
    assert TEMPLATE["Parameters"]["RerankModel"]["Default"] == "none"


def test_the_parameter_takes_only_the_models_the_policy_knows():
    pattern = re.compile(TEMPLATE["Parameters"]["RerankModel"]["AllowedPattern"])
    for ok in ("none", "bedrock/amazon.rerank-v1:0", "bedrock/cohere.rerank-v3-5:0"):
        assert pattern.fullmatch(ok), ok
    for bad in ("bedrock/amazon.titan-embed-text-v2:0", "local/all-MiniLM-L6-v2", "bedrock/amazon.rerank-v1:0x"):
        assert not pattern.fullmatch(bad), bad
