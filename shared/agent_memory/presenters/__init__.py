"""The presentation layer: one module per area maps the services' domain results (typed
records, dataclasses) to the wire: camelCase bodies and status codes (openapi.yaml).
Handlers (``functions/*/app.py``) call them; problem documents, SSE framing and
idempotency are the HTTP layer's (``agent_memory.http``)."""
