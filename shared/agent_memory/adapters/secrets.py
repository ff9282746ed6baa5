"""Secrets Manager reads for Lambda (cursor secret, provider keys), cached per process."""

from __future__ import annotations

from functools import lru_cache


def read_secret_uncached(arn: str, *, region: str | None = None) -> str:
    """The secret's current value (callers that follow rotations cache it themselves)."""
    import boto3  # lazy: only deployed stacks read secrets

    client = boto3.client("secretsmanager", region_name=region)
    return client.get_secret_value(SecretId=arn)["SecretString"]


@lru_cache(maxsize=16)
def read_secret(arn: str, *, region: str | None = None) -> str:
    return read_secret_uncached(arn, region=region)
