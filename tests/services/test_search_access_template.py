"""template.yaml confines OpenSearch access to the tenant's index and filters the projector's
stream to the record kinds that project."""

from __future__ import annotations

import json
from pathlib import Path

from agent_memory.cfn_template import load_template
from agent_memory.services.operations import projection

REPO = Path(__file__).resolve().parents[2]


def resources() -> dict:
    return load_template(REPO / "template.yaml")["Resources"]


def test_the_stream_filter_names_exactly_the_projected_kinds():
    event = resources()["ProjectorFunction"]["Properties"]["Events"]["TableStream"]["Properties"]
    patterns = [json.loads(f["Pattern"]) for f in event["FilterCriteria"]["Filters"]]
    assert {image for p in patterns for image in p["dynamodb"]} == {"NewImage", "OldImage"}
    for p in patterns:
        (image,) = p["dynamodb"].values()
        assert sorted(image["kind"]["S"]) == sorted(projection._BUILDERS)


def test_domain_iam_is_the_tenants_index_only():
    statement = resources()["SearchAccessPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    domain = statement["Fn::If"][2]["Fn::If"]
    assert domain[0] == "IsDomainSearch"
    assert domain[1]["Resource"] == [{"Fn::Sub": "${OpenSearchResourceArn}/agent-memory-${TenantId}"},
                                     {"Fn::Sub": "${OpenSearchResourceArn}/agent-memory-${TenantId}/*"}]
    assert all(not a.endswith("*") for a in domain[1]["Action"])


def test_serverless_data_access_policy_grants_the_function_roles_the_tenants_index():
    policy = resources()["SearchDataAccessPolicy"]
    assert policy["Type"] == "AWS::OpenSearchServerless::AccessPolicy"
    assert policy["Condition"] == "IsServerlessSearch"
    text, values = policy["Properties"]["Policy"]["Fn::Sub"]
    assert '"index/${OpenSearchCollectionName}/agent-memory-${TenantId}"' in text
    roles = values["Roles"]["Fn::Join"][1]
    # Functions name the policy (SAM makes <Function>Role); an explicit role attaches it.
    callers = [f"{name}Role" for name, r in resources().items()
               if {"Ref": "SearchAccessPolicy"} in (r.get("Properties", {}).get("Policies") or [])]
    callers += [name for name, r in resources().items() if r["Type"] == "AWS::IAM::Role"
                and {"Ref": "SearchAccessPolicy"} in (r.get("Properties", {}).get("ManagedPolicyArns") or [])]
    assert sorted(r["Fn::GetAtt"][0] for r in roles) == sorted(callers)
