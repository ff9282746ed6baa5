"""The deployed stack's lifecycle schedule (template.yaml ``LifecycleSchedule``, off by default):
the rule's event into the facts function's handler runs lifecycle decay and expire for every
context and partition, as the routes do, within the invocation's time. Both stores."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from agent_memory.cfn_template import load_template
from agent_memory.http.gateway import LocalLambdaContext

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(REPO / "template.yaml")


def facts_handler():
    spec = importlib.util.spec_from_file_location("facts_app", REPO / "functions/facts/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


def ended(api, context: str, name: str, partition: str | None = None) -> str:
    """A relation whose statement gave it an end in the past; its id."""
    headers = {"X-Memory-Partition": partition} if partition else None
    r = api.post(f"/api/v1/{context}/facts", {"text": "import", "infer": "triples", "triples": [
        {"entity": {"type": "person", "name": name}, "key": "manager", "target": {"type": "person", "name": "Ann"},
         "valid_until": "2020-01-01T00:00:00Z"},
        {"entity": {"type": "person", "name": name}, "key": "job_title", "value": "CTO"}]}, headers=headers)
    assert r.status == 200, r.text
    preview = api.post(f"/api/v1/{context}/lifecycle/expire", {"dryRun": True}, headers=headers).json()
    [rel_id] = preview["ids"]
    return rel_id


def left_to_expire(api, context: str, partition: str | None = None) -> int:
    headers = {"X-Memory-Partition": partition} if partition else None
    return api.post(f"/api/v1/{context}/lifecycle/expire", {"dryRun": True}, headers=headers).json()["affected"]


def test_the_scheduled_event_expires_every_context_and_partition(api, runtime):
    units = [("care", ended(api, "care", "Stu")), ("other", ended(api, "other", "Bo")),
             ("care", ended(api, "care", "Cy", partition="team-b"))]
    assert all(runtime.search.get(ctx, i) is not None for ctx, i in units)
    handler = facts_handler()
    run = handler({"care": "lifecycle"}, LocalLambdaContext("FactsFunction"))
    assert run == {"partitions": 3, "reached": 3, "decayed": run["decayed"], "expired": 3, "stopped": None}
    assert (left_to_expire(api, "care"), left_to_expire(api, "other"), left_to_expire(api, "care", "team-b")) == (0, 0, 0)
    assert [i for ctx, i in units if runtime.search.get(ctx, i) is not None] == []  # their search units too
    # The rest of memory stays: the current job titles, in each partition.
    r = api.get("/api/v1/care/entities/person/Cy", headers={"X-Memory-Partition": "team-b"})
    assert [(a["key"], a["value"]) for a in r.json()["attributes"]] == [("job_title", "CTO")]
    again = handler({"care": "lifecycle"}, LocalLambdaContext("FactsFunction"))
    assert (again["reached"], again["expired"]) == (3, 0)  # idempotent


def test_a_run_without_time_left_stops_before_a_partition(api, runtime):
    ended(api, "care", "Stu")
    run = facts_handler()({"care": "lifecycle"}, LocalLambdaContext("FactsFunction", timeout_s=2.0))
    assert (run["partitions"], run["reached"], run["expired"]) == (1, 0, 0) and "left" in run["stopped"]
    assert left_to_expire(api, "care") == 1  # nothing removed; the next run does it


def test_the_schedule_is_off_by_default_and_sends_the_event_the_handler_reads():
    param = TEMPLATE["Parameters"]["LifecycleSchedule"]
    assert param["Default"] == ""
    resources = TEMPLATE["Resources"]
    rule, permission = resources["LifecycleScheduleRule"], resources["LifecycleSchedulePermission"]
    assert rule["Condition"] == permission["Condition"] == "RunsLifecycleSchedule"
    assert TEMPLATE["Conditions"]["RunsLifecycleSchedule"] == {"Fn::Not": [{"Fn::Equals": [
        {"Ref": "LifecycleSchedule"}, ""]}]}
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["FactsFunction", "Arn"]}
    assert json.loads(target["Input"]) == {"care": "lifecycle"}
    assert rule["Properties"]["ScheduleExpression"] == {"Ref": "LifecycleSchedule"}
    assert permission["Properties"]["SourceArn"] == {"Fn::GetAtt": ["LifecycleScheduleRule", "Arn"]}
    assert permission["Properties"]["Principal"] == "events.amazonaws.com"


def test_the_stacks_retention_reaches_the_functions_limits(tmp_path):
    from agent_memory.config import load_settings

    assert TEMPLATE["Parameters"]["RetentionDays"]["Default"] == 0
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert env["AGENT_MEMORY_LIMITS_RETENTION_DAYS"] == {"Ref": "RetentionDays"}
    base = {"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AGENT_MEMORY_CURSOR_SECRET": "x" * 32}
    assert load_settings(env={**base, "AGENT_MEMORY_LIMITS_RETENTION_DAYS": "45"}).limits.retention_days == 45
    assert load_settings(env={**base, "AGENT_MEMORY_LIMITS_RETENTION_DAYS": "0"}).limits.retention_days == 0
