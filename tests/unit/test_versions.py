"""One version for the package: agent_memory.__version__ (what the MCP server reports, also
where no installed metadata exists, as in the Lambda layer) equals pyproject.toml's and
openapi.yaml's; the MCP server reports it, never the MCP SDK's own version."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml

import agent_memory

REPO = Path(__file__).resolve().parents[2]


def test_the_package_version_is_one_everywhere() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    spec = yaml.safe_load((REPO / "openapi.yaml").read_text(encoding="utf-8"))
    assert agent_memory.__version__ == project["version"] == spec["info"]["version"]


def test_the_mcp_server_reports_the_package_version_not_the_sdks() -> None:
    pytest.importorskip("mcp")
    from agent_memory.client import AsyncAgentMemory
    from agent_memory.interfaces.mcp.server import SERVER_NAME, build_server

    options = build_server(AsyncAgentMemory("acme", base_url="http://127.0.0.1:9")).create_initialization_options()
    assert (options.server_name, options.server_version) == (SERVER_NAME, agent_memory.__version__)
    assert options.server_version != metadata.version("mcp")
