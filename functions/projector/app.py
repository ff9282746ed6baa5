"""Projector: DynamoDB stream consumer (no route). A batch of changed records becomes one
index write holding each unit's newest state (``projection.collapse``). A record that cannot
be read is reported alone; a failed write reports the whole batch (partial batch response:
Lambda retries from the lowest reported record, then sends it to the dead-letter queue in
template.yaml, which ``agent-memory redrive`` replays). Each batch publishes how old its
oldest record was (``ProjectionLag``) and how many records failed (``ProjectionFailures``)."""

import logging
import time

from agent_memory.observability import count, instrumented
from agent_memory.runtime import get_runtime
from agent_memory.services.operations.projection import change_for

log = logging.getLogger("agent_memory.projector")


@instrumented(http=False)
def lambda_handler(event, lambda_context):
    changes, read, failed = [], [], []
    oldest = None
    for raw in event.get("Records", []):
        images = raw.get("dynamodb") or {}
        sequence = images.get("SequenceNumber")
        created = images.get("ApproximateCreationDateTime")
        if created is not None:
            oldest = float(created) if oldest is None else min(oldest, float(created))
        try:
            new = get_runtime().stream_record(images["NewImage"]) if "NewImage" in images else None
            old = get_runtime().stream_record(images["OldImage"]) if "OldImage" in images else None
            changes.append(change_for(new, old))
            read.append(sequence)
        except Exception:
            log.exception("stream record %s cannot be projected", sequence)
            failed.append(sequence)
    try:
        get_runtime().project(changes)
    except Exception:
        log.exception("projecting a batch of %d records failed", len(changes))
        failed.extend(read)
    if oldest is not None:
        count("ProjectionLag", max(0.0, time.time() - oldest) * 1000, "Milliseconds")
    count("ProjectionFailures", len(failed))
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failed]}
