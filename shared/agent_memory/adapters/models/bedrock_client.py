"""The ``bedrock-runtime`` client both Bedrock adapters use (Converse here, Titan embeddings in
``adapters.embedders``): botocore's retries off (ours apply), and which of its errors are
transient and what they mean. ``boto3``/``botocore`` are imported only inside these functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agent_memory.adapters.models.retries import call_with_retries
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.ports import ModelError, ModelTimeout

T = TypeVar("T")

BEDROCK_TRANSIENT = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelNotReadyException",
    "TooManyRequestsException",
}

def bedrock_runtime_client(region: str | None, timeout: float, max_pool_connections: int = 10) -> Any:
    """A ``bedrock-runtime`` client whose own retries are off (ours apply) and whose
    read timeout is ``timeout`` (botocore's default of 60 s exceeds what an API request can
    wait)."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # pragma: no cover - boto3 is a core dependency
        raise ConfigurationError("the Bedrock provider needs the 'boto3' package") from exc
    config = Config(
        read_timeout=timeout,
        connect_timeout=min(timeout, 10),
        retries={"total_max_attempts": 1, "mode": "standard"},
        max_pool_connections=max_pool_connections,
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config)


def bedrock_call(fn: Callable[[], T], *, max_retries: int, backoff: float) -> T:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call_with_retries(fn, is_transient=bedrock_transient, max_retries=max_retries, backoff=backoff)
    except (BotoCoreError, ClientError) as exc:
        raise translate_bedrock(exc) from exc


def bedrock_transient(exc: BaseException) -> bool:
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    if isinstance(exc, ReadTimeoutError | ConnectTimeoutError):
        return False
    if isinstance(exc, EndpointConnectionError | ConnectionClosedError):
        return True
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code") in BEDROCK_TRANSIENT
    return False


def translate_bedrock(exc: Exception) -> ModelError:
    from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

    if isinstance(exc, ReadTimeoutError | ConnectTimeoutError):
        return ModelTimeout(f"model call timed out: {exc}")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        if code == "ModelTimeoutException":
            return ModelTimeout(f"model call timed out: {error.get('Message', '')}")
        return ModelError(f"model call failed: {code}: {error.get('Message', '')}")
    return ModelError(f"model call failed: {exc}")
