"""Domain errors. Each carries the HTTP status it maps to; the HTTP layer maps them once
(``agent_memory.http.responses.error_response``) into problem documents: ``type``, ``title``, ``status``,
``detail`` plus optional extensions (``code``, ``field``)."""

from __future__ import annotations

from typing import Any

PROBLEM_TYPE_BASE = "https://agent-memory.dev/problems/"


class DomainError(Exception):
    """The base of every error the domain raises on purpose; anything else reaching the HTTP layer is a 500."""

    status = 500
    title = "Internal error"
    type_slug = "internal"

    def __init__(self, detail: str, *, code: str | None = None, headers: dict[str, str] | None = None,
                 **extensions: Any):
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or {}
        self.extensions = extensions


class InvalidRequest(DomainError):
    """Malformed JSON or a schema violation; ``field`` names the offending field."""

    status = 400
    title = "Invalid request"
    type_slug = "invalid-request"

    def __init__(self, detail: str, *, field: str | None = None, **kw: Any):
        if field is not None:
            kw["field"] = field
        super().__init__(detail, **kw)


class InvalidCursor(InvalidRequest):
    title = "Invalid cursor"
    type_slug = "invalid-cursor"


class Unauthorized(DomainError):
    status = 401
    title = "Unauthorized"
    type_slug = "unauthorized"


class Forbidden(DomainError):
    status = 403
    title = "Forbidden"
    type_slug = "forbidden"


class NotFound(DomainError):
    status = 404
    title = "Not found"
    type_slug = "not-found"


class Conflict(DomainError):
    status = 409
    title = "Conflict"
    type_slug = "conflict"


class SessionClosed(Conflict):
    title = "Session closed"
    type_slug = "session-closed"


class IdempotencyConflict(Conflict):
    title = "Idempotency key reused with a different request"
    type_slug = "idempotency-conflict"


class PayloadTooLarge(DomainError):
    status = 413
    title = "Payload too large"
    type_slug = "payload-too-large"


class UnsupportedMediaType(DomainError):
    """A body whose Content-Type names something other than JSON on a route that takes JSON."""

    status = 415
    title = "Unsupported media type"
    type_slug = "unsupported-media-type"


class InvalidContext(DomainError):
    status = 422
    title = "Invalid context id"
    type_slug = "invalid-context"


class Unprocessable(DomainError):
    """Semantically invalid input (for example a malformed triple)."""

    status = 422
    title = "Unprocessable request"
    type_slug = "unprocessable"


class UpstreamModelError(DomainError):
    status = 502
    title = "Model call failed"
    type_slug = "model-failed"


class UpstreamModelTimeout(DomainError):
    status = 504
    title = "Model call timed out"
    type_slug = "model-timeout"


class NotAvailable(DomainError):
    """A capability this deployment does not have (no upload bucket, say): not load, so no
    Retry-After and no client retry; ``code`` names what is missing."""

    status = 501
    title = "Not available in this deployment"
    type_slug = "not-available"


class ServiceBusy(DomainError):
    status = 503
    title = "Service busy"
    type_slug = "busy"

    def __init__(self, detail: str, *, retry_after: int = 1, **kw: Any):
        headers = {"Retry-After": str(retry_after)}
        super().__init__(detail, headers=headers, **kw)


class ConfigurationError(Exception):
    """Raised at startup for an unknown provider, missing key or bad setting."""
