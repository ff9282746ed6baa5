"""Presentation: domain results to the wire (camelCase bodies, docs/decisions.md, "Wire case").

One module per area; the handlers (``functions/*/app.py``) call them after the service. Status
codes, problem documents and SSE framing are the HTTP layer's (``agent_memory.http``).
Services never import this package (``.importlinter``)."""
