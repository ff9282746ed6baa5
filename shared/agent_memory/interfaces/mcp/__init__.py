"""``agent-memory mcp``: the service as an MCP server, over stdio or streamable HTTP.

It is a client of the API like any other: every tool and resource calls the service through
the async SDK (``AsyncAgentMemory``) with the API's own auth (``--api-key`` or
``AGENT_MEMORY_API_KEY``), so a key sees through MCP exactly what it sees over HTTP.

Tools take JSON objects whose schemas come from the service's request models
(``agent_memory.models``): ``remember`` is ``WriteFactsRequest``, ``recall`` is
``QueryRequest`` and so on, less the fields a tool does not offer. Arguments are validated
by the same models before anything is sent. An error response comes back as an MCP tool
error (``isError``) carrying the problem document's status and detail.

Resources: ``agent-memory://{context}/state`` (the context's state) and
``agent-memory://{context}/entities/{type}/{name}`` (an entity's current record).

Needs the ``mcp`` extra: ``pip install 'agent-memory[mcp]'``.

One module per concern: ``inputs`` (tool inputs the API takes as path or query parameters),
``tools`` (the tool table: each tool's request model and the SDK call it makes),
``parameters`` (what each parameter means, in the input schemas), ``render`` (results as short
text and as JSON), ``server`` (the MCP server and its resources; the ``/mcp`` route serves it
too), ``transports`` (stdio and streamable HTTP) and ``command`` (``agent-memory mcp`` and
``mcp-config``). Nothing is imported here.
"""
