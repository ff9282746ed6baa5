"""The SDK's errors: one base class, and one class per kind of error response.

``AgentMemoryError`` is every error the SDK raises: transport failures, exhausted retry
budgets, local limits (the thread ``context`` byte budget) and, as ``ApiError`` subclasses,
the service's problem documents. Each ``ApiError`` keeps ``status``, ``code``, ``detail``,
``field``, ``retry_after``, the trace id and the whole ``problem`` document.
"""

from __future__ import annotations

from typing import Any


class AgentMemoryError(Exception):
    """Every error the SDK raises."""


class ApiError(AgentMemoryError):
    """An error response of the service; ``problem`` is its problem document."""

    def __init__(self, status: int, problem: dict[str, Any], retry_after: float | None = None,
                 trace_id: str | None = None):
        self.status = status
        self.problem = problem
        self.code: str | None = problem.get("code")
        self.field: str | None = problem.get("field")
        self.title: str = problem.get("title") or ""
        # ``Message``: what AWS itself answers with (Lambda's 429 on a function URL)
        self.detail: str = problem.get("detail") or problem.get("title") or problem.get("Message") or f"HTTP {status}"
        self.retry_after = retry_after
        self.trace_id = problem.get("traceId") or trace_id
        super().__init__(f"{status} {self.title}: {self.detail}" + (f" (code {self.code})" if self.code else ""))


class ValidationError(ApiError):
    """400 or 422: the request was refused as invalid; ``field`` names the culprit."""


class AuthenticationError(ApiError):
    """401: no valid API key."""


class PermissionDeniedError(ApiError):
    """403: the key may not do this (verb, context, partition or write region)."""


class NotFoundError(ApiError):
    """404: no such record, or one the caller may not see."""


class ConflictError(ApiError):
    """409: a closed session, an idempotency key reused with another body, a busy document."""


class PayloadTooLargeError(ApiError):
    """413: a body over its cap."""


class RateLimitedError(ApiError):
    """429 or 503: shed or deferred before any work; ``retry_after`` says when to come back."""


class ModelError(ApiError):
    """502 or 504: the language model failed or timed out; nothing was written."""


class ServerError(ApiError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: ValidationError, 422: ValidationError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError, 429: RateLimitedError,
    503: RateLimitedError, 502: ModelError, 504: ModelError,
}


def error_for(status: int, problem: dict[str, Any], retry_after: float | None = None,
              trace_id: str | None = None) -> ApiError:
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(status, problem, retry_after, trace_id)
