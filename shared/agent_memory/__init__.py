"""agent-memory: memory service for LLM agents."""

# The package's version, where no installed metadata exists too (the Lambda layer copies the
# sources): the MCP server reports it. pyproject.toml's [project] version and openapi.yaml's
# info.version are kept equal to it (tests/unit/test_versions.py).
__version__ = "0.1.0"

import gc as _gc  # noqa: E402
import os as _os  # noqa: E402

if _os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
    # On Lambda the collector is off while a handler module imports: the import allocates
    # hundreds of thousands of objects that all live as long as the container (modules,
    # pydantic schemas, compiled patterns), so each collection it set off scanned them and freed
    # nothing, about a tenth of the import's CPU (docs/benchmarks.md). ``observability.
    # instrumented`` (the last thing a handler module runs) freezes what was built and turns the
    # collector back on; every invocation checks it is on.
    _gc.disable()
