"""The two committed lists of the Spectron client contract (tests/spectron/test_coverage.py).

``EXPECTED_MISSING``: client methods whose routes we do not serve yet, each with the issue that
adds it. Their tests are strict xfails: adding the route without emptying its entry here fails
the suite. ``OURS_ONLY``: our operations the client has no method for, allowed and named.
Any other operation in ``openapi.yaml`` or the client without the other fails the suite."""

from __future__ import annotations

# client method (dotted, as on ``Spectron``) -> the sibling issue that adds its route
EXPECTED_MISSING: dict[str, int] = {
    # 34: documents as users have them
}

# operationId -> why the client has no method for it
OURS_ONLY: dict[str, str] = {
    "listContexts": "the client is pinned to one context",
    "getReceipt": "erasure receipts are ours (issue 70)",
    "verifyReceipt": "erasure receipts are ours (issue 70)",
    "listSessions": "the client creates and deletes sessions but never lists them",
    "closeSession": "sessions close on our side only; the client deletes them",
    "listThreads": "threads (Memory.Thread) are ours",
    "getThread": "threads are ours",
    "appendThreadTurn": "threads are ours",
    "listThreadTurns": "threads are ours",
    "getThreadTurn": "threads are ours",
    "threadContext": "threads are ours",
    "setThreadAcl": "thread reader lists are ours",
    "createDocumentUpload": "upload tickets (presigned PUT for large files) are ours",
    "completeDocumentUpload": "upload tickets are ours",
    "listEntityHistory": "every attribute's history of an entity; the client reads one key's",
    "listAttributes": "the paged attribute list; the client reads attributes through entities.get",
    "listRelations": "the paged relation list",
    "listActions": "the paged action list",
    "listInstructions": "the paged instruction list; the client reads instructions in state/profile",
    "listUncertainty": "the uncertainty list",
    "resolveUncertainty": "resolving an uncertainty",
    "getAttribute": "one fact by id (Mem0-style edit by id; the client forgets by query)",
    "correctAttribute": "correcting one fact by id",
    "deleteAttribute": "deleting one fact by id",
    "getRelation": "one relation by id",
    "correctRelation": "correcting one relation by id",
    "deleteRelation": "deleting one relation by id",
    "getAction": "one action by id",
    "deleteAction": "deleting one action by id",
    "getInstruction": "one instruction by id",
    "deleteInstruction": "deleting one instruction by id",
    "exportContext": "moving a context out (docs/export.md) is ours",
    "importContext": "moving a context in is ours",
    "startExportJob": "moving a context out as a job (past a deployed stack's 6 MB) is ours",
    "getExportJob": "an export job's progress and download is ours",
    "createImportJob": "moving a context in as a job is ours",
    "startImportJob": "starting an uploaded import job is ours",
    "getImportJob": "an import job's progress and result is ours",
    "mcp": "MCP on the API is for agent hosts' own MCP clients, not the client",
    "getOpenApiJson": "the API's own description, for tools and the reference page",
    "getOpenApiYaml": "the API's own description, as YAML",
}
