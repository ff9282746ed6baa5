"""Who may do what: API keys and authentication, grants, scopes and the request context a caller resolves to."""
