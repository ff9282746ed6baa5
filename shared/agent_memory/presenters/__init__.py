"""Presentation: one module per area maps the services' domain results (typed records,
dataclasses) to the wire: camelCase bodies (docs/decisions.md, "Wire case") and status codes
(openapi.yaml). Handlers (``functions/*/app.py``) call them after the service; problem
documents, SSE framing and idempotency are the HTTP layer's (``agent_memory.http.api``).
Services never import this package (``.importlinter``)."""
