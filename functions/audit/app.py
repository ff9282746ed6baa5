"""Audit worker: the CloudWatch Logs subscription (no route) that writes the API functions'
audit cost rows to the table (``services.operations.audit_ingest``), off their request path.
A subscription event is ``{"awslogs": {"data": <base64 of gzipped JSON>}}`` whose
``logEvents`` are the matching log lines; a control message (CloudWatch's delivery check)
carries none."""

import base64
import gzip
import json

from agent_memory.observability import count, instrumented
from agent_memory.runtime import get_runtime
from agent_memory.services.operations.audit_ingest import ingest


@instrumented(http=False)
def lambda_handler(event, lambda_context):
    payload = json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"])))
    if payload.get("messageType") != "DATA_MESSAGE":
        return {"written": 0, "skipped": 0}
    done = ingest(get_runtime().base_store, [e.get("message", "") for e in payload.get("logEvents") or []])
    count("AuditRowsWritten", done.written)
    if done.skipped:
        count("AuditLinesSkipped", done.skipped)
    return {"written": done.written, "skipped": done.skipped}
