"""template.yaml confines OpenSearch access to the tenant's index and filters the projector's
stream to the record kinds that project."""

from __future__ import annotations

import json
from pathlib import Path

from agent_memory.cfn_template import load_template
from agent_memory.services.operations import projection
from tests.deploy import iam_table

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
    for policy in ("SearchRead", "SearchWrite"):
        statements = [b for st in iam_table.GRANTS[policy].statements for b in _branches(st)]
        domain = [st for st in statements if st["Effect"] == "Allow" and st["Action"][0].startswith("es:")]
        assert domain, policy
        for st in domain:
            listed = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            assert all(r["Fn::Sub"].startswith("${OpenSearchResourceArn}/agent-memory-${TenantId}/_") for r in listed)
            assert all(not a.endswith("*") for a in st["Action"])
    writes = [b for st in iam_table.GRANTS["SearchWrite"].statements
              for b in _branches(st) if "es:ESHttpPost" in b.get("Action", [])]
    assert [w["Resource"] for w in writes] == [{"Fn::Sub": "${OpenSearchResourceArn}/agent-memory-${TenantId}/_bulk"}]


def _holds(function: str, grant: str) -> bool:
    return grant in iam_table.FUNCTIONS[function]


def test_serverless_data_access_policy_grants_readers_and_writers_the_tenants_index_only():
    policy = resources()["SearchDataAccessPolicy"]
    assert policy["Type"] == "AWS::OpenSearchServerless::AccessPolicy"
    assert policy["Condition"] == "IsServerlessSearch"
    text, values = policy["Properties"]["Policy"]["Fn::Sub"]
    assert '"index/${Collection}/agent-memory-${TenantId}","index/${Collection}/agent-memory-${TenantId}-*"' in text
    assert "index//" not in text and "${OpenSearchCollectionName}" not in text

    def roles(group: str) -> list[str]:
        return sorted(r["Fn::GetAtt"][0] for r in values[group]["Fn::Join"][1])

    writers = sorted(iam_table.role_name(f) for f in iam_table.FUNCTIONS if _holds(f, "SearchWrite"))
    readers = sorted(iam_table.role_name(f) for f in iam_table.FUNCTIONS
                     if _holds(f, "SearchRead") and not _holds(f, "SearchWrite"))
    assert roles("Writers") == writers and roles("Readers") == readers
    assert values["AdminRole"] == {"Fn::GetAtt": ["SearchIndexFunctionRole", "Arn"]}
