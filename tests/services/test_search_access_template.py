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


def _branches(node):
    """Every concrete statement an ``Fn::If`` tree can yield."""
    if isinstance(node, dict) and "Fn::If" in node:
        return [b for branch in node["Fn::If"][1:] for b in _branches(branch)]
    return [] if node == {"Ref": "AWS::NoValue"} else [node]


def test_domain_iam_is_the_tenants_alias_only_and_names_each_path():
    for policy in ("SearchAccessPolicy", "SearchWritePolicy"):
        statements = [b for st in resources()[policy]["Properties"]["PolicyDocument"]["Statement"]
                      for b in _branches(st)]
        domain = [st for st in statements if st["Effect"] == "Allow" and st["Action"][0].startswith("es:")]
        assert domain, policy
        for st in domain:
            listed = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            assert all(r["Fn::Sub"].startswith("${OpenSearchResourceArn}/agent-memory-${TenantId}/_") for r in listed)
            assert all(not a.endswith("*") for a in st["Action"])
    writes = [b for st in resources()["SearchWritePolicy"]["Properties"]["PolicyDocument"]["Statement"]
              for b in _branches(st) if "es:ESHttpPost" in b.get("Action", [])]
    assert [w["Resource"] for w in writes] == [{"Fn::Sub": "${OpenSearchResourceArn}/agent-memory-${TenantId}/_bulk"}]


def _attaches(resource: dict, policy: str) -> bool:
    props = resource.get("Properties", {})
    listed = (props.get("Policies") or []) + (props.get("ManagedPolicyArns") or [])
    return any({"Ref": policy} in _branches(p) for p in listed if isinstance(p, dict))


def test_serverless_data_access_policy_grants_readers_and_writers_the_tenants_index_only():
    policy = resources()["SearchDataAccessPolicy"]
    assert policy["Type"] == "AWS::OpenSearchServerless::AccessPolicy"
    assert policy["Condition"] == "IsServerlessSearch"
    text, values = policy["Properties"]["Policy"]["Fn::Sub"]
    assert '"index/${Collection}/agent-memory-${TenantId}","index/${Collection}/agent-memory-${TenantId}-*"' in text
    assert "index//" not in text and "${OpenSearchCollectionName}" not in text

    def roles(group: str) -> list[str]:
        return sorted(r["Fn::GetAtt"][0] for r in values[group]["Fn::Join"][1])

    def role_of(name: str, r: dict) -> str:
        return name if r["Type"] == "AWS::IAM::Role" else f"{name}Role"

    everything = resources()
    writers = sorted(role_of(n, r) for n, r in everything.items() if _attaches(r, "SearchWritePolicy"))
    readers = sorted(role_of(n, r) for n, r in everything.items()
                     if _attaches(r, "SearchAccessPolicy") and not _attaches(r, "SearchWritePolicy"))
    assert roles("Writers") == writers and roles("Readers") == readers
    assert values["AdminRole"] == {"Fn::GetAtt": ["SearchIndexFunctionRole", "Arn"]}
