"""template.yaml's roles are tests/deploy/iam_table.py's output: one role per function, one inline
policy each, no managed policy, and a "*" resource only where AWS offers no narrower one."""

from __future__ import annotations

from pathlib import Path

import iam_table
from iam_policy import Stack

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]
TEXT = (REPO / "template.yaml").read_text()
TEMPLATE = load_template(REPO / "template.yaml")
RESOURCES = TEMPLATE["Resources"]
# The functions with a line of their own; those in SHARED_ROLES take another's role.
FUNCTIONS = sorted(n for n, r in RESOURCES.items()
                   if r["Type"] == "AWS::Serverless::Function" and n not in iam_table.SHARED_ROLES)


def test_the_template_holds_exactly_what_the_table_generates():
    assert iam_table.current_block(TEXT) == iam_table.render(), \
        "template.yaml's roles differ from tests/deploy/iam_table.py: run python tests/deploy/iam_table.py --write"


def test_every_function_has_its_line_and_its_own_role_and_nothing_else():
    assert sorted(iam_table.FUNCTIONS) == FUNCTIONS
    for name in FUNCTIONS:
        props = RESOURCES[name]["Properties"]
        assert props.get("Role") == {"Fn::GetAtt": [iam_table.role_name(name), "Arn"]}, name
        assert "Policies" not in props, f"{name}: SAM would generate a role and attach managed policies"
        assert RESOURCES[iam_table.role_name(name)].get("Condition") == RESOURCES[name].get("Condition"), name
    for name, owner in iam_table.SHARED_ROLES.items():  # the same code, so the same calls
        assert RESOURCES[name]["Properties"]["CodeUri"] == RESOURCES[owner]["Properties"]["CodeUri"], name
        assert RESOURCES[name]["Properties"]["Role"] == {"Fn::GetAtt": [iam_table.role_name(owner), "Arn"]}, name
        assert "Policies" not in RESOURCES[name]["Properties"], name


def test_no_role_attaches_a_managed_policy_and_the_stack_defines_none():
    roles = {n: r for n, r in RESOURCES.items() if r["Type"] == "AWS::IAM::Role"}
    assert sorted(roles) == sorted(iam_table.role_name(f) for f in FUNCTIONS)
    for name, role in roles.items():
        assert "ManagedPolicyArns" not in role["Properties"], name
        assert len(role["Properties"]["Policies"]) == 1, name
    assert not [n for n, r in RESOURCES.items() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    assert "Policies" not in TEMPLATE["Globals"]["Function"]


def test_every_grant_is_used_and_every_function_names_only_known_grants():
    used = {g for f in iam_table.FUNCTIONS for g in iam_table.grants_of(f)}
    assert used == set(iam_table.GRANTS)


def _branches(node):
    if isinstance(node, dict) and "Fn::If" in node:
        return [b for branch in node["Fn::If"][1:] for b in _branches(branch)]
    return [] if node == {"Ref": "AWS::NoValue"} else [node]


def test_a_star_resource_only_where_aws_requires_it():
    stars = set()
    for grant in iam_table.GRANTS.values():
        for statement in grant.statements:
            for st in _branches(statement):
                resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
                if any(r == "*" or (isinstance(r, str) and r.endswith(":*")) for r in resources):
                    stars.add(st["Sid"])
    assert stars == set(iam_table.STAR_GRANTS)


def _stack(**params: str) -> Stack:
    return Stack(TEMPLATE, {"TenantId": "acme", **params}, {n: n for n in RESOURCES}, {}, stand_in_attributes=True)


def test_audit_rows_are_put_by_the_functions_that_serve_delegated_reads_and_deleted_by_administration_only():
    from iam_policy import Call, decide

    table = "arn:aws:stand-in:us-east-1:123456789012:MemoryTable.Arn"
    key = {"dynamodb:LeadingKeys": ["c#acme#default#audit"]}
    s = _stack(SearchBackend="collection")
    roles = {f: s.role_statements(iam_table.role_name(f)) for f in FUNCTIONS}
    putters = {f for f in FUNCTIONS if decide(roles[f], Call("dynamodb:PutItem", table, key))}
    deleters = {f for f in FUNCTIONS if decide(roles[f], Call("dynamodb:DeleteItem", table, key))}
    assert putters == {f for f in FUNCTIONS if {"AuditWrite", "RecordWrite"} & set(iam_table.FUNCTIONS[f])}
    assert deleters == {"AdministrationFunction"}  # /scopes/forget erases a scope, its audit rows with it


def test_each_queue_worker_polls_only_its_own_queue():
    s = _stack()
    workers = {"IngestionFunction": "IngestionQueue", "PortabilityWorkerFunction": "PortabilityQueue"}
    for function, queue in workers.items():
        polls = [st for st in s.role_statements(iam_table.role_name(function)) if st["Sid"] == "LambdaPollsTheQueue"]
        assert [st["Resource"] for st in polls] == [f"arn:aws:stand-in:us-east-1:123456789012:{queue}.Arn"]
    assert not [f for f in FUNCTIONS if f not in workers
                and any(st["Sid"] == "LambdaPollsTheQueue" for st in s.role_statements(iam_table.role_name(f)))]
