"""The OpenSearch client: SigV4-signed for AWS endpoints, plain for local clusters, and which
transport failures mean the index is unavailable (``SearchUnavailable``) rather than a bug.
``opensearchpy`` and ``boto3`` are imported only inside these functions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

from agent_memory.ports import SearchUnavailable


def search_failure(exc: BaseException) -> SearchUnavailable | None:
    """The ``SearchUnavailable`` a transport failure means (refused, timed out, a 5xx,
    throttled), or ``None`` for anything else (a bad query stays a bug, not an outage)."""
    from opensearchpy import exceptions as ose

    if isinstance(exc, ose.ConnectionTimeout | TimeoutError):
        return SearchUnavailable("timeout", str(exc))
    if isinstance(exc, ose.ConnectionError | ConnectionError):
        return SearchUnavailable("refused", str(exc))
    if isinstance(exc, ose.TransportError) and isinstance(exc.status_code, int):
        if exc.status_code == 429:
            return SearchUnavailable("throttled", str(exc))
        if exc.status_code >= 500:
            return SearchUnavailable("server-error", str(exc))
    return None


_F = TypeVar("_F", bound=Callable[..., Any])


def unavailable_on_transport_failure(method: _F) -> _F:
    """Public index calls raise ``SearchUnavailable`` for a transport failure."""
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except SearchUnavailable:
            raise
        except Exception as exc:
            failure = search_failure(exc)
            if failure is None:
                raise
            raise failure from exc

    return call  # type: ignore[return-value]


CLIENT_TIMEOUT_S = 30


def make_client(endpoint: str, *, service: str = "aoss", region: str | None = None) -> Any:
    """An ``opensearchpy.OpenSearch`` client for ``endpoint``.

    AWS endpoints are signed with SigV4 (``AWSV4SignerAuth(credentials, region, service)``,
    ``service`` ``es`` for a managed domain, ``aoss`` for Serverless); ``http://`` and
    localhost URLs are local clusters and get no signing (basic auth when the URL has
    user info, certificate checks off for localhost https, as dev clusters self-sign).
    """
    from opensearchpy import AWSV4SignerAuth, OpenSearch, RequestsHttpConnection

    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    https = parsed.scheme == "https"
    host = parsed.hostname or ""
    local = not https or host in ("localhost", "127.0.0.1", "::1")
    kwargs: dict[str, Any] = {
        "hosts": [{"host": host, "port": parsed.port or (443 if https else 80)}],
        "use_ssl": https,
        "verify_certs": https and not local,
        "ssl_show_warn": False,
        "connection_class": RequestsHttpConnection,
        "timeout": CLIENT_TIMEOUT_S,
    }
    if local:
        if parsed.username:
            kwargs["http_auth"] = (parsed.username, parsed.password or "")
    else:
        import boto3

        session = boto3.Session(region_name=region) if region else boto3.Session()
        signing_region = region or session.region_name
        if not signing_region:
            raise ValueError("OpenSearch SigV4 signing needs a region (pass region= or set AWS_REGION)")
        kwargs["http_auth"] = AWSV4SignerAuth(session.get_credentials(), signing_region, service)
    return OpenSearch(**kwargs)
