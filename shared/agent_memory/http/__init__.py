"""The HTTP edge: request parsing and problem documents for the handlers (api), the API Gateway stand-in (gateway), the ASGI app and local server, multipart forms, bounded JSON and load shedding."""
