"""Fixtures of the service tests that need the table's DynamoDB stream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.config import load_settings
from agent_memory.runtime import Runtime, set_runtime
from tests.support.streams import REGION


@pytest.fixture
def stream_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime on moto's DynamoDB (the table built from template.yaml, its stream on) that
    projects from the stream: writes reach the index only through the projector."""
    import boto3
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_STORE": "dynamodb",
                                  "AGENT_MEMORY_PROJECTION": "stream", "AGENT_MEMORY_CURSOR_SECRET": "test",
                                  "AWS_REGION": REGION, "AGENT_MEMORY_TABLE": "agent-memory-test"})
    with mock_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), settings.table_name)
        runtime = Runtime(settings)
        set_runtime(runtime)
        yield runtime
    set_runtime(None)
