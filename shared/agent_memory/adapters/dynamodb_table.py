"""Creates the records table from template.yaml's ``MemoryTable`` resource.

Tests (moto) and the local server's ``--store dynamodb`` mode (moto server or a real
account) build their table from the same definition that is deployed, so a key, index
or stream change in template.yaml cannot drift from what they run against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_memory.cfn_template import load_template, repo_root

TABLE_RESOURCE = "MemoryTable"
# CloudFormation property names that CreateTable takes unchanged.
_SAME_NAMED = ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "BillingMode", "ProvisionedThroughput")


def table_properties(template_path: str | Path | None = None) -> dict[str, Any]:
    """``Resources.MemoryTable.Properties`` of template.yaml (the repo's when no path is given)."""
    template = load_template(template_path or repo_root() / "template.yaml")
    return template["Resources"][TABLE_RESOURCE]["Properties"]


def create_table_kwargs(properties: dict[str, Any], table_name: str) -> dict[str, Any]:
    """CreateTable arguments for CloudFormation ``AWS::DynamoDB::Table`` properties.

    TTL and point-in-time recovery are not CreateTable arguments; see
    ``create_table_from_template``.
    """
    kwargs: dict[str, Any] = {"TableName": table_name}
    kwargs.update({name: properties[name] for name in _SAME_NAMED if name in properties})
    stream = properties.get("StreamSpecification")
    if stream:
        kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
    sse = properties.get("SSESpecification")
    if sse:
        kwargs["SSESpecification"] = _sse_specification(sse)
    return kwargs


def create_table_from_template(client: Any, table_name: str, template_path: str | Path | None = None) -> bool:
    """Create ``table_name`` as template.yaml defines ``MemoryTable``, then enable its TTL and
    point-in-time recovery. Returns ``False`` (changing nothing) when the table exists, so
    a local server can call it on every start against a persistent moto server."""
    properties = table_properties(template_path)
    try:
        client.create_table(**create_table_kwargs(properties, table_name))
    except client.exceptions.ResourceInUseException:
        return False
    # TTL and PITR can only be switched on once the table is ACTIVE (immediately on moto).
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    ttl = properties.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
        )
    pitr = properties.get("PointInTimeRecoverySpecification")
    if pitr and pitr.get("PointInTimeRecoveryEnabled"):
        client.update_continuous_backups(
            TableName=table_name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    return True


def ensure_table(table_name: str, *, region: str | None = None, endpoint_url: str | None = None) -> bool:
    """Create the configured table unless it exists (``agent-memory serve --create-table``),
    through the client the record store builds from the same arguments."""
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    store = DynamoDBRecordStore(table_name, region=region, endpoint_url=endpoint_url)
    return create_table_from_template(store.client, table_name)


def _sse_specification(sse: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation says ``SSEEnabled``/``KMSMasterKeyId``; CreateTable ``Enabled``/``KMSMasterKeyId``."""
    spec: dict[str, Any] = {"Enabled": bool(sse.get("SSEEnabled"))}
    for name in ("SSEType", "KMSMasterKeyId"):
        if name in sse:
            spec[name] = sse[name]
    return spec
