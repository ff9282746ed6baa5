"""Each function's model grants (tests/deploy/iam_table.py: one grant per configured model, to the
functions that call it), evaluated for the calls Bedrock authorises (the built-artifact scenario
runs offline models, so this is where the Bedrock ARN shapes are checked).

A plain model id is one call: ``bedrock:InvokeModel`` (Converse) or
``InvokeModelWithResponseStream`` (ConverseStream) on ``foundation-model/<id>`` in the stack's
region. An inference profile id (``us.``, ``eu.``, ``global.``...) is two: the caller's on
``inference-profile/<id>`` in the stack's region, then Bedrock's on the foundation model in the
destination region it picks (geographic profiles) or with no region (global profiles), carrying
``bedrock:InferenceProfileArn``. Each must be allowed, and nothing else."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import iam_table
import pytest
from iam_policy import Call, Stack, decide

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(REPO / "template.yaml")
ACCOUNT = "123456789012"
GEO = {"us": ["us-east-1", "us-east-2", "us-west-2"], "eu": ["eu-central-1", "eu-west-1", "eu-west-3", "eu-north-1"],
       "apac": ["ap-northeast-1", "ap-southeast-2"], "jp": ["ap-northeast-1", "ap-northeast-3"],
       "global": [""]}  # a global profile's routed call names no region
ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")


MODEL_GRANTS = {"ExtractionModel": "ExtractionModel", "ResponseModel": "ResponseModel",
                "ResponseModelStreaming": "ResponseModel", "EmbeddingModel": "EmbeddingModel"}
CALLERS = {f: {MODEL_GRANTS[g] for g in grants if g in MODEL_GRANTS} for f, grants in iam_table.FUNCTIONS.items()}


def statements(region: str, function: str = "ChatFunction", **models: str):
    """The function role's Bedrock statements (ChatFunction's calls all three models)."""
    s = Stack(TEMPLATE, {"TenantId": "acme", "SearchBackend": "collection", **models},
              {n: n for n in TEMPLATE["Resources"]}, {}, region=region, account=ACCOUNT, stand_in_attributes=True)
    return [st for st in s.role_statements(iam_table.role_name(function))
            if any(str(a).startswith("bedrock:") for a in st["Action"])]


def needed_calls(model_id: str, region: str) -> list[Call]:
    prefix, _, base = model_id.partition(".")
    if prefix in GEO:
        profile = f"arn:aws:bedrock:{region}:{ACCOUNT}:inference-profile/{model_id}"
        calls = [Call(a, profile, {}, f"{a} {profile}") for a in ACTIONS]
        for dest in GEO[prefix]:
            routed = f"arn:aws:bedrock:{dest}::foundation-model/{base}"
            calls += [Call(a, routed, {"bedrock:InferenceProfileArn": profile}, f"{a} {routed} via {profile}")
                      for a in ACTIONS]
        return calls
    direct = f"arn:aws:bedrock:{region}::foundation-model/{model_id}"
    return [Call(a, direct, {}, f"{a} {direct}") for a in ACTIONS]


def model_id(ref: str) -> str:
    return ref.split("/", 1)[1]


CONFIGS = [
    ("us-east-1", {}),  # the template's defaults: global profiles, Titan in-region
    ("eu-west-1", {"ExtractionModel": "bedrock/eu.anthropic.claude-haiku-4-5-20251001-v1:0",
                   "ResponseModel": "bedrock/eu.anthropic.claude-sonnet-4-6"}),
    ("us-west-2", {"ExtractionModel": "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0",
                   "ResponseModel": "bedrock/anthropic.claude-3-haiku-20240307-v1:0"}),
    ("us-east-1", {"ExtractionModel": "bedrock/amazon.nova-micro-v1:0", "ResponseModel": "bedrock/amazon.nova-pro-v1:0"}),
]


@pytest.mark.parametrize(("region", "models"), CONFIGS)
def test_the_configured_models_profiles_and_routed_foundation_models_are_allowed(region, models):
    policy = statements(region, **models)
    params = {p: models.get(p, TEMPLATE["Parameters"][p]["Default"]) for p in
              ("ExtractionModel", "ResponseModel", "EmbeddingModel")}
    for parameter, ref in params.items():
        for call in needed_calls(model_id(ref), region):
            if parameter == "ResponseModel" or call.action == "bedrock:InvokeModel":
                assert decide(policy, call), call.why


GRANT_ACTIONS = {"ExtractionModel": {"bedrock:InvokeModel"}, "ResponseModel": {"bedrock:InvokeModel"},
                 "ResponseModelStreaming": set(ACTIONS), "EmbeddingModel": {"bedrock:InvokeModel"}}


@pytest.mark.parametrize("function", sorted(CALLERS))
@pytest.mark.parametrize(("region", "models"), CONFIGS)
def test_each_function_may_call_only_the_models_its_line_names(region, models, function):
    """Model grants per model and per function: a function that only embeds cannot converse,
    and only the chat function streams."""
    policy = statements(region, function, **models)
    params = {p: models.get(p, TEMPLATE["Parameters"][p]["Default"]) for p in
              ("ExtractionModel", "ResponseModel", "EmbeddingModel")}
    for ref in set(params.values()):
        for call in needed_calls(model_id(ref), region):
            expected = any(call.action in GRANT_ACTIONS[g] and params[MODEL_GRANTS[g]] == ref
                           for g in iam_table.FUNCTIONS[function] if g in MODEL_GRANTS)
            assert (decide(policy, call) is not None) == expected, (function, call.why)


@pytest.mark.parametrize(("region", "models"), CONFIGS)
def test_other_models_other_profiles_and_other_regions_are_denied(region, models):
    policy = statements(region, **models)
    other_profile = f"arn:aws:bedrock:{region}:{ACCOUNT}:inference-profile/us.anthropic.claude-opus-4-6-v1"
    refused = [
        Call("bedrock:InvokeModel", f"arn:aws:bedrock:{region}::foundation-model/anthropic.claude-opus-4-6-v1"),
        Call("bedrock:InvokeModel", other_profile),
        # a foundation model reached through someone else's profile, or with no profile at all
        Call("bedrock:InvokeModel", "arn:aws:bedrock:us-east-2::foundation-model/anthropic.claude-opus-4-6-v1",
             {"bedrock:InferenceProfileArn": other_profile}),
        Call("bedrock:InvokeModel", "arn:aws:bedrock:us-east-2::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"),
        Call("bedrock:CreateModelCustomizationJob", "*"),
    ]
    for ref in (models.get("ResponseModel") or TEMPLATE["Parameters"]["ResponseModel"]["Default"],):
        mid = model_id(ref)
        if mid.split(".", 1)[0] in GEO:  # the stack's own profile, but from another region
            refused.append(Call("bedrock:InvokeModel", f"arn:aws:bedrock:ap-south-1:{ACCOUNT}:inference-profile/{mid}"))
    for call in refused:
        assert decide(policy, call) is None, call


def test_without_a_profile_the_policy_has_no_routed_statement():
    policy = statements("us-east-1", ExtractionModel="bedrock/amazon.nova-micro-v1:0",
                        ResponseModel="bedrock/amazon.nova-pro-v1:0")
    # one statement per model (extraction, response, embedding), none routed
    assert len(policy) == 3 and not any(s["Sid"].endswith("Routed") for s in policy)
    assert not any("*" in str(s["Resource"]) for s in policy)


RETIRED = ("anthropic.claude-3-5-sonnet-20240620", "anthropic.claude-3-haiku-20240307", "anthropic.claude-v2",
           "anthropic.claude-instant")


def test_default_and_tenant_models_are_current_and_offered_where_the_tenant_deploys():
    samconfig = tomllib.loads((REPO / "samconfig.toml").read_text())
    defaults = {p: TEMPLATE["Parameters"][p]["Default"] for p in ("ExtractionModel", "ResponseModel", "EmbeddingModel")}
    for env in samconfig.keys() - {"version"}:
        deploy = samconfig[env]["deploy"]["parameters"]
        params = {**defaults, **dict(re.findall(r'(\w+)="([^"]*)"', deploy["parameter_overrides"]))}
        for name, ref in params.items():
            if name not in defaults:
                continue
            mid = model_id(ref)
            assert ref.startswith("bedrock/") and not any(r in mid for r in RETIRED), (env, name, ref)
            prefix = mid.split(".", 1)[0]
            if prefix in GEO and prefix != "global":  # a geographic profile serves its own geography
                assert deploy["region"] in GEO[prefix] or deploy["region"].startswith(prefix), (env, name, ref)
