"""What CloudFormation checks before it creates anything: the parameter constraints and the
template's Rules. Every name the stack generates from the tenant id must fit AWS's limits
(OpenSearch Serverless collection and policy names: 3-32 characters, [a-z][a-z0-9-]), so a bad
tenant id or a missing search parameter fails at validation, not half-way through a deploy."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from iam_policy import Stack

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(REPO / "template.yaml")
RESOURCES = TEMPLATE["Resources"]
SAMCONFIG = tomllib.loads((REPO / "samconfig.toml").read_text())
AOSS_NAME = re.compile(r"^[a-z][a-z0-9-]{2,31}$")  # collections and security/access policies
GENERATED_NAMES = ("SearchEncryptionPolicy", "SearchNetworkPolicy", "SearchCollection", "SearchDataAccessPolicy")


def parameter_violations(params: dict[str, str]) -> list[str]:
    """CloudFormation's parameter checks (AllowedPattern, AllowedValues, MinValue, lengths)."""
    out = []
    for name, spec in TEMPLATE["Parameters"].items():
        value = params.get(name, spec.get("Default"))
        if value is None:
            out.append(f"{name}: required")
            continue
        value = str(value)
        if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
            out.append(f"{name}: {value!r} does not match {spec['AllowedPattern']}")
        if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
            out.append(f"{name}: {value!r} not in {spec['AllowedValues']}")
        if "MinValue" in spec and float(value) < float(spec["MinValue"]):
            out.append(f"{name}: below {spec['MinValue']}")
        if "MaxLength" in spec and len(value) > int(spec["MaxLength"]):
            out.append(f"{name}: longer than {spec['MaxLength']}")
    return out


def stack(params: dict[str, str]) -> Stack:
    attributes = {f"{n}Role.Arn": f"arn:aws:iam::123456789012:role/{n}Role" for n in RESOURCES}
    attributes.update({"ProjectorRole.Arn": "arn:aws:iam::123456789012:role/ProjectorRole",
                       "SearchCollection.Arn": "arn:aws:aoss:us-east-1:123456789012:collection/id"})
    return Stack(TEMPLATE, params, {n: n for n in RESOURCES}, attributes)


def rule_violations(params: dict[str, str]) -> list[str]:
    """The template's Rules, evaluated as CloudFormation does before a change set."""
    s = stack(params)
    out = []
    for name, rule in TEMPLATE.get("Rules", {}).items():
        if "RuleCondition" in rule and not s.resolve(rule["RuleCondition"]):
            continue
        out += [f"{name}: {a['AssertDescription']}" for a in rule["Assertions"] if not s.resolve(a["Assert"])]
    return out


def validate(params: dict[str, str]) -> list[str]:
    problems = parameter_violations(params)
    return problems or rule_violations(params)


def generated_names(params: dict[str, str]) -> dict[str, str]:
    s = stack(params)
    return {n: s.resolve(RESOURCES[n]["Properties"]["Name"]) for n in GENERATED_NAMES if s.exists(n)}


LONGEST = "a-long-tenant-id-0123456789ab"  # 29 characters
assert len(LONGEST) == 29


@pytest.mark.parametrize("tenant", ["a", "acme", LONGEST])
def test_every_generated_name_fits_for_any_tenant_id_the_template_accepts(tenant):
    params = {"TenantId": tenant, "SearchBackend": "collection"}
    assert validate(params) == []
    names = generated_names(params)
    assert set(names) == set(GENERATED_NAMES)
    for resource, name in names.items():
        assert AOSS_NAME.fullmatch(name), (resource, name)
    policy = json.loads(stack(params).resolve(RESOURCES["SearchDataAccessPolicy"]["Properties"]["Policy"]))
    resources = [r for rule_set in policy for rule in rule_set["Rules"] for r in rule["Resource"]]
    assert resources and not [r for r in resources if "//" in r], resources


@pytest.mark.parametrize("tenant", [LONGEST + "x", "Acme", "-acme", "9acme", "acme_corp", ""])
def test_a_tenant_id_that_would_make_a_bad_name_fails_validation(tenant):
    assert [p for p in validate({"TenantId": tenant}) if p.startswith("TenantId")]


@pytest.mark.parametrize(("params", "rule"), [
    ({"SearchBackend": "shared"}, "SharedSearchNeedsItsEndpointAndResource"),
    ({"SearchBackend": "shared", "OpenSearchEndpoint": "https://x.aoss.amazonaws.com"},
     "SharedSearchNeedsItsEndpointAndResource"),
    ({"SearchBackend": "shared", "OpenSearchEndpoint": "https://x.aoss.amazonaws.com",
      "OpenSearchResourceArn": "arn:aws:aoss:us-east-1:123456789012:collection/abc"}, "SharedCollectionNeedsItsName"),
    ({"SearchBackend": "collection", "OpenSearchEndpoint": "https://x"}, "OwnCollectionIsServerless"),
    ({"SearchBackend": "collection", "OpenSearchEngine": "lucene"}, "ServerlessSearchUsesFaiss"),
    ({"SearchBackend": "shared", "OpenSearchEndpoint": "https://x.aoss.amazonaws.com", "OpenSearchEngine": "lucene",
      "OpenSearchResourceArn": "arn:aws:aoss:us-east-1:123456789012:collection/abc",
      "OpenSearchCollectionName": "shared-memory"}, "ServerlessSearchUsesFaiss"),
])
def test_search_modes_without_what_they_need_fail_the_rules(params, rule):
    assert [p for p in validate({"TenantId": "acme", **params}) if p.startswith(rule)]


def test_a_shared_collection_with_its_name_and_a_shared_domain_pass():
    shared_collection = {"TenantId": "acme", "SearchBackend": "shared", "OpenSearchEndpoint": "https://x.aoss.amazonaws.com",
                         "OpenSearchResourceArn": "arn:aws:aoss:us-east-1:123456789012:collection/abc",
                         "OpenSearchCollectionName": "shared-memory"}
    assert validate(shared_collection) == []
    domain = {"TenantId": "acme", "SearchBackend": "shared", "OpenSearchService": "es",
              "OpenSearchEndpoint": "https://search-x.us-east-1.es.amazonaws.com",
              "OpenSearchResourceArn": "arn:aws:es:us-east-1:123456789012:domain/shared"}
    assert validate(domain) == []
    assert validate({**domain, "OpenSearchEngine": "lucene"}) == [], "a managed domain may run lucene"
    assert validate({**shared_collection, "SearchAccessPolicyName": "p" * 33})


def _overrides(env: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)="([^"]*)"', SAMCONFIG[env]["deploy"]["parameters"]["parameter_overrides"]))


@pytest.mark.parametrize("env", sorted(SAMCONFIG.keys() - {"version"}))
def test_each_tenant_config_validates_and_deploys_with_search_on(env):
    params = _overrides(env)
    assert validate(params) == []
    s = stack(params)
    assert s.condition("HasSearch") and s.condition("CreatesCollection"), f"{env} deploys without search"
    assert s.exists("SearchIndexSetup") and s.exists("SearchCollection")
