"""Entry points shaped like other memory libraries' (``compat.mem0``)."""
