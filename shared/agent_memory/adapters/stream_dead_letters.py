"""The projector's dead letters: Lambda's on-failure records (SQS) for the table's stream.

A message names a failed batch only by stream, shard and sequence range
(``DDBStreamBatchInfo``); the records themselves are read back from the stream, which keeps
them 24 hours. Past that (or when the shard is gone) ``changes`` answers ``None`` and the
caller falls back to reindexing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agent_memory.adapters.dynamodb_store import record_from_image
from agent_memory.ports import Record

_GONE = ("TrimmedDataAccessException", "ExpiredIteratorException", "ResourceNotFoundException")
_EMPTY_POLLS = 3  # an open shard answers empty pages while it waits for new records


@dataclass(frozen=True)
class DeadLetter:
    receipt: str
    stream_arn: str
    shard_id: str
    start_sequence: str
    end_sequence: str


@dataclass(frozen=True)
class StreamChange:
    """One stream record: the item's key and its last image (new, else old; None if neither)."""

    pk: str
    sk: str
    image: Record | None


class StreamDeadLetters:
    def __init__(self, queue_url: str, *, region: str | None = None, sqs: Any = None, streams: Any = None,
                 streams_endpoint: str | None = None) -> None:
        import boto3

        self.queue_url = queue_url
        self.sqs = sqs or boto3.client("sqs", region_name=region)
        self.streams = streams or boto3.client("dynamodbstreams", region_name=region, endpoint_url=streams_endpoint)

    def letters(self) -> Iterator[DeadLetter]:
        """Every message now in the queue (each stays invisible until settled or timed out)."""
        while True:
            page = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10,
                                            WaitTimeSeconds=0, VisibilityTimeout=300).get("Messages", [])
            if not page:
                return
            for message in page:
                info = json.loads(message["Body"])["DDBStreamBatchInfo"]
                yield DeadLetter(message["ReceiptHandle"], info["streamArn"], info["shardId"],
                                 info["startSequenceNumber"], info["endSequenceNumber"])

    def changes(self, letter: DeadLetter) -> list[StreamChange] | None:
        """The batch's records, read back from the stream; ``None`` once the stream lost them."""
        from botocore.exceptions import ClientError

        end = int(letter.end_sequence)
        out: list[StreamChange] = []
        try:
            iterator = self.streams.get_shard_iterator(
                StreamArn=letter.stream_arn, ShardId=letter.shard_id, ShardIteratorType="AT_SEQUENCE_NUMBER",
                SequenceNumber=letter.start_sequence)["ShardIterator"]
            empty = 0
            while iterator and empty < _EMPTY_POLLS:
                page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                records = page.get("Records", [])
                empty = 0 if records else empty + 1
                for r in records:
                    if int(r["dynamodb"]["SequenceNumber"]) > end:
                        return out
                    out.append(_change(r["dynamodb"]))
                iterator = page.get("NextShardIterator")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _GONE:
                return None
            raise
        return out

    def settle(self, letter: DeadLetter) -> None:
        self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=letter.receipt)

    def release(self, letter: DeadLetter) -> None:
        """Hand a letter back unsettled (visible again now) for a later run."""
        self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=letter.receipt,
                                           VisibilityTimeout=0)


def _change(images: dict[str, Any]) -> StreamChange:
    keys = images["Keys"]
    image = images.get("NewImage") or images.get("OldImage")
    return StreamChange(keys["pk"]["S"], keys["sk"]["S"], record_from_image(image) if image else None)
