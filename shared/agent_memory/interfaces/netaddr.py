"""Whether a bind address stays on this machine (the CLI's serve command and the MCP server
refuse open access anywhere else)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere
