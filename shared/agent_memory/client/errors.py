"""The SDK's errors: one base class callers can catch, and the server's problem documents."""

from __future__ import annotations

from typing import Any


class MemoryError(Exception):  # noqa: A001 - the SDK's public name, spec'd as ``MemoryError``
    """Every error the SDK raises: transport failures, exhausted retry budgets, local limits
    (the ``context`` byte budget) and, as ``ApiError``, error responses of the service."""


class ApiError(MemoryError):
    """An error response; ``problem`` is the service's problem document (``type``, ``title``,
    ``status``, ``detail``, optional ``code`` and ``field``)."""

    def __init__(self, status: int, problem: dict[str, Any], retry_after: float | None = None):
        self.status = status
        self.problem = problem
        self.code: str | None = problem.get("code")
        self.field: str | None = problem.get("field")
        self.detail: str = problem.get("detail") or problem.get("title") or f"HTTP {status}"
        self.retry_after = retry_after
        super().__init__(f"{status} {problem.get('title', '')}: {self.detail}"
                         + (f" (code {self.code})" if self.code else ""))
