"""Fixtures for the RecordStore contract: one ``store`` per adapter (ids ``sqlite``, ``dynamodb``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_memory.adapters.sqlite_store import SQLiteRecordStore

TABLE_NAME = "agent-memory-test"
REGION = "us-east-1"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Fake credentials and region, and no shared config files: nothing can reach AWS."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


@pytest.fixture
def moto_dynamodb(aws_env, serialised_moto) -> Iterator[object]:
    """A moto DynamoDB with the records table built from template.yaml; yields its client.
    Requests are serialised inside moto as DynamoDB applies them atomically (see
    ``serialise_moto`` in tests/conftest.py)."""
    import boto3
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_table_from_template(client, TABLE_NAME)
        yield client


@pytest.fixture
def table_name() -> str:
    return TABLE_NAME


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[object]:
    if request.param == "sqlite":
        sqlite_store = SQLiteRecordStore(tmp_path / "data" / "records.db")
        yield sqlite_store
        sqlite_store.close()
    else:
        from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

        request.getfixturevalue("moto_dynamodb")
        # The store builds its own client, as it does in Lambda.
        yield DynamoDBRecordStore(TABLE_NAME, region=REGION)
