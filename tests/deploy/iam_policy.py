"""A small IAM evaluator for the stack's own policies, so the deploy checks can ask "may this
function make this call?" with resources and conditions, not action names alone.

- ``Stack`` resolves template.yaml's intrinsics (``Ref``, ``Fn::GetAtt``, ``Fn::Sub``,
  ``Fn::If``, ``Fn::Select``, ``Fn::Split``, ``Fn::Join``, conditions) for given parameters
  and stand-in physical names, so a policy reads as AWS would see it after the deploy.
- ``Call`` is one request as IAM evaluates it: an action, a resource ARN and the request's
  condition-key values (``dynamodb:LeadingKeys``, ``bedrock:InferenceProfileArn``...).
- ``decide`` applies IAM's rules for identity policies in one account: an explicit ``Deny``
  wins, else some ``Allow`` whose ``Action``, ``Resource`` and every ``Condition`` match,
  else an implicit deny. Wildcards ``*`` and ``?`` as IAM reads them (case-insensitive
  actions, case-sensitive ARNs); condition operators ``StringEquals``, ``StringLike``,
  ``ArnLike``, ``ArnEquals``, ``Bool`` and their ``ForAllValues:``/``ForAnyValue:`` forms
  (``ForAllValues`` over a missing key is true, as in IAM, so callers always pass the key).
- ``aoss_permission`` maps an OpenSearch Serverless HTTP request to the data access policy
  permission and resource it needs (AWS's "Supported operations" table), and
  ``data_policy_allows`` evaluates an ``AWS::OpenSearchServerless::AccessPolicy`` document.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from intrinsics import Intrinsics


class Stack(Intrinsics):
    def __init__(self, template: dict[str, Any], parameters: dict[str, str], physical: dict[str, str],
                 attributes: dict[str, str], *, region: str = "us-east-1", account: str = "123456789012",
                 partition: str = "aws", stand_in_attributes: bool = False) -> None:
        super().__init__()
        self.template = template
        values = {name: str(spec["Default"]) for name, spec in template.get("Parameters", {}).items()
                  if "Default" in spec}
        values.update(parameters)
        missing = [n for n in template.get("Parameters", {}) if n not in values]
        if missing:
            raise ValueError(f"parameters without a value: {missing}")
        self.values = {**values, "AWS::Region": region, "AWS::AccountId": account, "AWS::Partition": partition,
                       "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "agent-memory-test", **physical}
        self.attributes = attributes
        self.stand_in_attributes = stand_in_attributes  # an attribute not given reads as a stand-in
        self.region, self.account, self.partition = region, account, partition

    def exists(self, resource: str) -> bool:
        cond = self.template["Resources"][resource].get("Condition")
        return cond is None or self.condition(cond)

    def ref(self, name: str) -> Any:
        return self.values[name]

    def get_att(self, logical: str, attr: str) -> str:
        name = f"{logical}.{attr}"
        if self.stand_in_attributes and name not in self.attributes:
            return f"arn:{self.partition}:stand-in:{self.region}:{self.account}:{name}"
        return self.attributes[name]

    def policy_statements(self, policy: str) -> list[dict[str, Any]]:
        """The resolved statements of a managed policy resource."""
        if not self.exists(policy):
            return []
        document = self.resolve(self.template["Resources"][policy]["Properties"]["PolicyDocument"])
        return [dict(s, Sid=s.get("Sid") or f"{policy}[{i}]") for i, s in enumerate(document["Statement"])]

    def role_statements(self, role: str) -> list[dict[str, Any]]:
        """The resolved statements of a role's inline policies (none when the role's condition
        fails), each with its Sid or a made-up one."""
        if not self.exists(role):
            return []
        props = self.template["Resources"][role]["Properties"]
        out = []
        for policy in props.get("Policies", []):
            document = self.resolve(policy["PolicyDocument"])
            out += [dict(s, Sid=s.get("Sid") or f"{role}.{policy['PolicyName']}[{i}]")
                    for i, s in enumerate(document["Statement"])]
        return out


# --- evaluation --------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    why: str = field(default="", hash=False, compare=False)


def _pattern(text: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text)
    return re.compile(f"^{body}$", re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    return bool(_pattern(pattern, ignore_case=ignore_case).match(value))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _match_one(op: str, expected: list[str], value: str) -> bool:
    if op in ("StringEquals", "ArnEquals"):
        return value in expected
    if op in ("StringLike", "ArnLike"):
        return any(wildcard(e, value) for e in expected)
    if op == "Bool":
        return str(value).lower() in [str(e).lower() for e in expected]
    raise AssertionError(f"condition operator {op} is not implemented")


def condition_holds(block: dict[str, Any], context: dict[str, Any]) -> bool:
    for operator, keys in block.items():
        qualifier, _, op = operator.rpartition(":")
        for key, expected in keys.items():
            expected = [str(e) for e in _as_list(expected)]
            present = key in context and context[key] is not None
            values = [str(v) for v in _as_list(context.get(key))] if present else []
            if qualifier == "ForAllValues":
                if not all(_match_one(op, expected, v) for v in values):
                    return False
            elif qualifier == "ForAnyValue":
                if not any(_match_one(op, expected, v) for v in values):
                    return False
            else:
                if not present or len(values) != 1 or not _match_one(op, expected, values[0]):
                    return False
    return True


def statement_matches(statement: dict[str, Any], call: Call) -> bool:
    if not any(wildcard(a, call.action, ignore_case=True) for a in _as_list(statement["Action"])):
        return False
    if not any(wildcard(r, call.resource) for r in _as_list(statement["Resource"])):
        return False
    return condition_holds(statement.get("Condition") or {}, call.context)


def decide(statements: list[dict[str, Any]], call: Call) -> list[str] | None:
    """The Sids of the Allow statements that admit ``call``; ``None`` when it is denied."""
    if any(s["Effect"] == "Deny" and statement_matches(s, call) for s in statements):
        return None
    allowing = [s["Sid"] for s in statements if s["Effect"] == "Allow" and statement_matches(s, call)]
    return allowing or None


def granted_pairs(statements: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(Sid, action) for every action an Allow statement lists."""
    return [(s["Sid"], a) for s in statements if s["Effect"] == "Allow" for a in _as_list(s["Action"])]


@cache
def known_actions() -> dict[str, set[str]]:
    """IAM's action names per service prefix (lower case), from cfn-lint's bundled data."""
    import cfnlint

    data = json.loads((Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json").read_text())
    return {prefix: set(spec.get("Actions", {})) for prefix, spec in data.items()}


def action_exists(action: str) -> bool:
    prefix, _, name = action.partition(":")
    return name.lower() in known_actions().get(prefix, set())


# --- OpenSearch Serverless data access ------------------------------------------------------


def aoss_permissions(method: str, path: str, body: str = "") -> list[tuple[str, str, str]]:
    """(permission, resource type, name) a request needs, per AWS's table of supported
    operations: ``index`` names are index or alias names."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if not parts:
        raise AssertionError(f"{method} / is a root-level call")
    if parts[0] == "_aliases":
        # The table's row for POST _aliases is aoss:CreateCollectionItems ("create index aliases");
        # moving one is an update of a collection item: a call may be either, so both are needed.
        actions = json.loads(body or "{}").get("actions", [])
        named = {next(iter(a.values())).get(k) for a in actions for k in ("index", "alias")} - {None}
        return [("aoss:CreateCollectionItems", "collection", ""), ("aoss:UpdateCollectionItems", "collection", "")] + \
            [("aoss:UpdateIndex", "index", n) for n in named]
    if parts[0] == "_alias":
        return [("aoss:DescribeCollectionItems", "collection", "")]
    if parts[0].startswith("_"):
        raise AssertionError(f"{method} {path}: a root-level API")
    index, rest = parts[0], parts[1:]
    if not rest:
        return [({"PUT": "aoss:CreateIndex", "HEAD": "aoss:DescribeIndex", "GET": "aoss:DescribeIndex",
                  "DELETE": "aoss:DeleteIndex"}[method], "index", index)]
    op = rest[0]
    if op in ("_mapping", "_mappings", "_settings", "_setting"):
        return [("aoss:DescribeIndex" if method == "GET" else "aoss:UpdateIndex", "index", index)]
    if op in ("_search", "_msearch", "_count", "_mget") or (op == "_doc" and method in ("GET", "HEAD")):
        return [("aoss:ReadDocument", "index", index)]
    if op in ("_bulk", "_doc", "_create", "_update", "_delete_by_query", "_update_by_query"):
        return [("aoss:WriteDocument", "index", index)]
    raise AssertionError(f"{method} {path}: no data access permission mapped")


def data_policy_allows(policy: list[dict[str, Any]], role_arn: str, collection: str,
                       permission: str, resource_type: str, name: str) -> bool:
    resource = f"collection/{collection}" if resource_type == "collection" else f"index/{collection}/{name}"
    for rule_set in policy:
        if role_arn not in rule_set["Principal"]:
            continue
        for rule in rule_set["Rules"]:
            if rule["ResourceType"] != resource_type:
                continue
            if any(wildcard(r, resource) for r in rule["Resource"]) and \
                    any(wildcard(p, permission, ignore_case=True) for p in rule["Permission"]):
                return True
    return False
