"""moto's DynamoDB stream of the records table, read the way Lambda's event source mapping
and the redrive command read it."""

from __future__ import annotations

from typing import Any

import boto3

REGION = "us-east-1"
# An explicit endpoint: newer botocore routes ARN calls to an endpoint moto does not match.
STREAMS_ENDPOINT = f"https://streams.dynamodb.{REGION}.amazonaws.com"


def stream_arn(table: str) -> str:
    return boto3.client("dynamodb", region_name=REGION).describe_table(TableName=table)["Table"]["LatestStreamArn"]


def stream_shards(table: str) -> tuple[str, list[tuple[str, list[dict[str, Any]]]]]:
    """The table's stream ARN and, per shard, its id and every record on it (from TRIM_HORIZON)."""
    arn = stream_arn(table)
    streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=STREAMS_ENDPOINT)
    shards = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        shards.append((shard["ShardId"], streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]))
    return arn, shards
