"""agent-memory: memory service for LLM agents."""

# The package's version, where no installed metadata exists too (the Lambda layer copies the
# sources): the MCP server reports it. pyproject.toml's [project] version and openapi.yaml's
# info.version are kept equal to it (tests/unit/test_versions.py).
__version__ = "0.1.0"
