"""Projector: DynamoDB stream consumer (no route). Each changed record reaches the search
index; a failing record is reported alone (partial batch response) and retried by Lambda,
then sent to the dead-letter destination in template.yaml."""

import time

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from agent_memory.adapters.dynamodb_store import record_from_image
from agent_memory.observability import count, instrumented
from agent_memory.runtime import get_runtime

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def record_handler(record: DynamoDBRecord) -> None:
    images = record.raw_event.get("dynamodb") or {}
    created = images.get("ApproximateCreationDateTime")
    if created:
        count("ProjectionLag", max(0.0, time.time() - float(created)) * 1000, "Milliseconds")
    new = record_from_image(images["NewImage"]) if "NewImage" in images else None
    old = record_from_image(images["OldImage"]) if "OldImage" in images else None
    get_runtime().project(new, old)


@instrumented(http=False)
def lambda_handler(event, context):
    result = process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                      context=context)
    # Each failed record is retried by Lambda, then sent to the dead-letter queue.
    count("ProjectionFailures", len(result.get("batchItemFailures") or []))
    return result
