"""Ingestion worker: SQS consumer (no route) of document ingestion jobs
(``services.ingestion``), reprocess jobs (``PUT /documents/{id}``, the same job on a document
flagged ``reprocess``) and recompute-links jobs (``task: "links"``). Each message is one document; its chunks are extracted with
bounded parallelism and committed one by one. A job that runs out of time after committing
chunks hands the rest on as a new message (a continuation carrying its progress) and counts
as done, so running out of time spends none of the queue's receives. A message whose delivery
failed (an error, or out of time without progress) is reported alone (partial batch
response): SQS delivers it again after the visibility timeout, and after ``maxReceiveCount``
failed receives moves it to the dead-letter queue in template.yaml."""

import json
import logging

from agent_memory.observability import count, instrumented
from agent_memory.runtime import get_runtime
from agent_memory.services.documents.ingestion import IngestionJob

log = logging.getLogger("agent_memory.ingestion")

# Stop starting model calls this long before the invocation ends: the calls in flight finish
# and commit inside it (a model call's timeout is below this margin; see template.yaml).
STOP_MARGIN_MS = 60_000


@instrumented(http=False)
def lambda_handler(event, lambda_context):
    def out_of_time() -> bool:
        return lambda_context is not None and lambda_context.get_remaining_time_in_millis() < STOP_MARGIN_MS

    failed = []
    for message in event.get("Records", []):
        message_id = message.get("messageId")
        try:
            job = IngestionJob.from_message(json.loads(message["body"]))
            runtime = get_runtime()
            status = runtime.ingestion.deliver(job, should_stop=out_of_time, hand_on=runtime.ingestion_queue.send)
            if status == "continued":
                count("DocumentsContinued")
            elif status == "relinked":  # a recompute-links job (POST /documents/recompute-links) finished
                count("DocumentLinksRecomputed")
            else:
                count("DocumentsIngested" if status == "ready" else "DocumentsNotIngested")
        except Exception:
            log.exception("ingestion message %s did not finish", message_id)
            failed.append(message_id)
    return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}
