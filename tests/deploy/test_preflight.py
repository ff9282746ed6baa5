"""The preflight's checks fail on what AWS would refuse (a check that cannot fail checks
nothing): each runs here on a small translated template just over, and just within, its quota.
`make preflight` runs them on template.yaml as SAM translates it (tests/deploy/preflight.py)."""

from __future__ import annotations

import os

import pytest

from tests.deploy import preflight
from tests.deploy.preflight import QUOTAS, check_template, report, sam_input


def _role(managed: int, inline_chars: int = 0) -> dict:
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/" + "x" * inline_chars}
    return {"Type": "AWS::IAM::Role", "Properties": {
        "AssumeRolePolicyDocument": {},
        "ManagedPolicyArns": [{"Ref": f"P{i}"} for i in range(managed)],
        "Policies": [{"PolicyName": "p", "PolicyDocument": {"Version": "2012-10-17", "Statement": [statement]}}]}}


def _template(resources: dict, **extra) -> dict:
    policies = {f"P{i}": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}}} for i in range(12)}
    return {"Parameters": {"TenantId": {"Type": "String"}}, "Conditions": {}, **extra,
            "Resources": {**policies, **resources}}


def _worst(template: dict, quota: str, parameters: dict | None = None) -> int:
    return max(f.value for f in check_template(template, parameters or {}, "t") if f.quota == quota)


def test_managed_policies_per_role():
    assert _worst(_template({"R": _role(10)}), "managed-policies-per-role") == 10
    findings = check_template(_template({"R": _role(11)}), {}, "t")
    text, ok = report(findings)
    assert not ok and "11 > 10 (t: R)" in text


def test_a_role_under_a_false_condition_is_not_counted_and_if_picks_its_branch():
    role = _role(0)
    role["Properties"]["ManagedPolicyArns"] = [
        {"Fn::If": ["Big", {"Ref": "P0"}, {"Ref": "AWS::NoValue"}]} for _ in range(11)]
    template = _template({"R": role}, Conditions={"Big": {"Fn::Equals": [{"Ref": "Mode"}, "big"]}})
    template["Parameters"]["Mode"] = {"Type": "String", "Default": "small"}
    assert _worst(template, "managed-policies-per-role") == 0
    assert _worst(template, "managed-policies-per-role", {"Mode": "big"}) == 11


def test_inline_policy_size_counts_characters_without_whitespace():
    small = _worst(_template({"R": _role(1, 0)}), "role-inline-policy-chars")
    over = _template({"R": _role(1, QUOTAS["role-inline-policy-chars"].limit)})
    assert _worst(over, "role-inline-policy-chars") > QUOTAS["role-inline-policy-chars"].limit > small
    assert not report(check_template(over, {}, "t"))[1]
    assert preflight.policy_chars({"a": "b c"}) == len('{"a":"bc"}')


def test_stack_resources_outputs_and_parameters():
    many = {f"Q{i}": {"Type": "AWS::SQS::Queue", "Properties": {}} for i in range(500)}
    assert _worst(_template(many), "stack-resources") == 512
    outputs = {f"O{i}": {"Value": "x"} for i in range(201)}
    assert _worst(_template({}, Outputs=outputs), "stack-outputs") == 201
    params = {f"A{i}": {"Type": "String", "Default": ""} for i in range(200)}
    template = _template({})
    template["Parameters"].update(params)
    assert _worst(template, "stack-parameters") == 201


def _function(**props) -> dict:
    return {"Type": "AWS::Lambda::Function", "Properties": props}


def test_function_environment_layers_and_reserved_concurrency():
    env = {"Variables": {"A": "x" * 4095}}
    assert _worst(_template({"F": _function(Environment=env)}), "env-var-bytes") == 4096
    env = {"Variables": {"A": "x" * 4095, "B": {"Fn::Sub": "${TenantId}"}}}
    assert _worst(_template({"F": _function(Environment=env)}), "env-var-bytes", {"TenantId": "t"}) == 4098
    assert _worst(_template({"F": _function(Layers=["a"] * 6)}), "layers-per-function") == 6
    fns = {f"F{i}": _function(ReservedConcurrentExecutions={"Ref": "R"}) for i in range(13)}
    template = _template(fns)
    template["Parameters"]["R"] = {"Type": "String"}
    assert _worst(template, "reserved-concurrency", {"R": "69"}) == 897
    assert not report(check_template(template, {"R": "70"}, "t"))[1]



def test_the_default_reservation_times_the_stacks_an_account_holds_keeps_100_unreserved():
    roles = {f"R{i}": _role(0) for i in range(13)}  # 13 roles: 1,000 // 13 = 76 stacks an account holds
    template = _template({**roles, "Stream": _function(ReservedConcurrentExecutions={"Ref": "S"})})
    template["Parameters"]["S"] = {"Type": "Number"}

    def found(parameters: dict) -> list:
        return preflight.check_account_concurrency(template, parameters, "t")

    assert [f.value for f in found({"S": "11"})] == [836]
    over = found({"S": "12"})  # 912: the 76th stack would take the account under 100 unreserved
    assert over[0].value == 912 and not report(over)[1]
    # ReservedConcurrency is an opt-in that lowers the tenants per account instead (the per-stack check stays)
    assert found({"S": "12", "ReservedConcurrency": "1"}) == []

def test_http_api_routes():
    body = {"paths": {f"/p{i}": {"get": {}, "post": {}, "parameters": []} for i in range(151)}}
    api = {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"Body": body}}
    assert _worst(_template({"Api": api}), "http-api-routes") == 302


def test_serverless_search_names():
    policy = {"Type": "AWS::OpenSearchServerless::SecurityPolicy",
              "Properties": {"Name": {"Fn::Sub": "am-${TenantId}"}, "Type": "network"}}
    assert _worst(_template({"N": policy}), "aoss-name-chars", {"TenantId": "t" * 29}) == 32
    assert not report(check_template(_template({"N": policy}), {"TenantId": "t" * 30}, "t"))[1]
    access = {"Type": "AWS::OpenSearchServerless::AccessPolicy",
              "Properties": {"Name": "am-x", "Type": "data", "Policy": {"Fn::Sub": "[${TenantId}]"}}}
    assert _worst(_template({"A": access}), "aoss-policy-chars", {"TenantId": "t" * 20479}) == 20481
    assert not report(check_template(_template({"A": access}), {"TenantId": "t" * 20479}, "t"))[1]


def test_built_artifact_size(tmp_path):
    (tmp_path / "DependenciesLayer" / "python").mkdir(parents=True)
    (tmp_path / "DependenciesLayer" / "python" / "big.bin").write_bytes(b"\0" * 1000)
    (tmp_path / "FactsFunction").mkdir()
    (tmp_path / "FactsFunction" / "app.py").write_text("x = 1\n")
    (found,) = preflight.check_built_artifacts(tmp_path)
    assert found.value == 1006 and found.ok
    os.truncate(tmp_path / "DependenciesLayer" / "python" / "big.bin", QUOTAS["unzipped-bytes"].limit)
    (found,) = preflight.check_built_artifacts(tmp_path)
    assert not found.ok


def test_every_quota_names_the_aws_page_it_comes_from():
    for quota in QUOTAS.values():
        assert quota.source.startswith("https://docs.aws.amazon.com/"), quota


@pytest.mark.parametrize("label", sorted(preflight.CONFIGURATIONS))
def test_each_parameter_set_names_only_template_parameters_and_passes_its_patterns(label):
    """Every configuration the preflight translates is one CloudFormation would accept."""
    import re

    template = sam_input()
    params = template["Parameters"]
    values = {**preflight.defaults(template), **preflight.CONFIGURATIONS[label]}
    for name, value in values.items():
        assert name in params, name
        spec = params[name]
        if "AllowedPattern" in spec:
            assert re.fullmatch(spec["AllowedPattern"], value), (name, value)
        if "AllowedValues" in spec:
            assert value in [str(v) for v in spec["AllowedValues"]], (name, value)
        if "MaxLength" in spec:
            assert len(value) <= spec["MaxLength"], (name, len(value))
        if spec.get("Type") == "Number":
            assert float(value) >= spec.get("MinValue", float("-inf")), (name, value)


def test_the_longest_values_reach_every_free_strings_max_length():
    """A quota a parameter can break is checked at that parameter's worst value."""
    template = sam_input()
    for label in ("collection+longest-values", "shared-es+longest-values"):
        values = preflight.CONFIGURATIONS[label]
        for name, spec in template["Parameters"].items():
            if "MaxLength" in spec and name in values and name not in ("OpenSearchEndpoint", "OpenSearchResourceArn"):
                assert len(values[name]) == spec["MaxLength"], (label, name)
    es = preflight.CONFIGURATIONS["shared-es+longest-values"]
    assert len(es["OpenSearchEndpoint"]) == len(es["OpenSearchResourceArn"]) == 256


def test_the_openapi_document_replaces_the_include():
    api = sam_input()["Resources"]["HttpApi"]["Properties"]["DefinitionBody"]
    assert "paths" in api and "Fn::Transform" not in api


# --- operations: who hears the alarms, what outlives the stack ------------------------------


def _samconfig(**envs: str) -> dict:
    return {"version": 0.1, **{env: {"deploy": {"parameters": {"parameter_overrides": overrides}}}
                               for env, overrides in envs.items()}}


def test_a_config_env_whose_alarms_notify_no_one_fails_the_preflight():
    problems, _ = preflight.check_alarm_destinations(_samconfig(
        a='TenantId="a" AlarmEmail="ops@acme.io"', b='TenantId="b" AlarmTopicArn="arn:aws:sns:eu-west-1:1:t"',
        c='TenantId="c"', d='TenantId="d" AlarmEmail=""'))
    assert [p.split("]")[0] for p in problems] == ["samconfig.toml [c", "samconfig.toml [d"]


def test_a_placeholder_address_warns_and_fails_for_the_env_about_to_be_deployed():
    config = _samconfig(dev='TenantId="dev" AlarmEmail="dev-alarms@example.com"',
                        acme='TenantId="acme" AlarmEmail="oncall@acme.example"',
                        real='TenantId="real" AlarmEmail="oncall@acme.io"')
    problems, warnings = preflight.check_alarm_destinations(config)
    assert problems == [] and len(warnings) == 2
    assert preflight.check_alarm_destinations(config, "real") == ([], [])
    problems, _ = preflight.check_alarm_destinations(config, "acme")
    assert len(problems) == 1 and "placeholder" in problems[0]
    assert preflight.check_alarm_destinations(config, "nope")[0] == ["samconfig.toml has no [nope] config-env"]


def test_every_samconfig_tenant_block_shows_an_alarm_destination():
    import tomllib

    samconfig = tomllib.loads((preflight.REPO / "samconfig.toml").read_text())
    destinations = preflight.alarm_destinations(samconfig)
    assert destinations and all(destinations.values()), destinations
    assert preflight.check_alarm_destinations(samconfig)[0] == []


def test_the_template_keeps_the_memory_and_deletes_the_collection_as_documented():
    from agent_memory.cfn_template import load_template

    template = load_template(preflight.REPO / "template.yaml")
    assert preflight.check_retention(template) == []
    for name, attribute in (("UploadBucket", "DeletionPolicy"), ("MemoryTable", "UpdateReplacePolicy")):
        changed = {**template, "Resources": {**template["Resources"],
                                             name: {k: v for k, v in template["Resources"][name].items() if k != attribute}}}
        allowed = "Retain or RetainExceptOnCreate" if attribute == "DeletionPolicy" else "Retain"
        assert preflight.check_retention(changed) == [
            f"{name}: {attribute} is None, not {allowed} ({preflight.CFN_DELETION_POLICY})"]
    kept = {**template, "Resources": {**template["Resources"],
                                      "SearchCollection": {**template["Resources"]["SearchCollection"],
                                                           "DeletionPolicy": "Retain"}}}
    assert len(preflight.check_retention(kept)) == 1
    # The docs say the same.
    deploying = (preflight.REPO / "docs" / "deploying.md").read_text()
    opensearch = (preflight.REPO / "docs" / "opensearch.md").read_text()
    for name in preflight.RETAINED:
        assert f"`{name}`" in deploying.split("## What the stack holds")[1].split("\n## ")[0], name
    assert "## Deleting a stack" in opensearch and "the collection is deleted with the stack" in opensearch


def test_a_stack_without_an_alarm_destination_says_so_in_its_outputs():
    from agent_memory.cfn_template import load_template

    template = load_template(preflight.REPO / "template.yaml")
    off = template["Outputs"]["AlarmsOff"]
    assert off["Condition"] == "AlarmsNotifyNoOne" and "NO ONE" in off["Value"]
    assert template["Conditions"]["AlarmsNotifyNoOne"] == {"Fn::Not": [{"Condition": "NotifiesAlarms"}]}
