"""Presigned document uploads in S3 (``ports.UploadStore``).

The documents function signs a ``PUT`` for one object key (``documents/<document id>``) with
the exact ``Content-Length`` the caller declared, so S3 refuses any other size; the ingestion
worker reads the object once and deletes it after its chunks are stored. The bucket
(template.yaml ``UploadBucket``) encrypts at rest, blocks public access, expires what is left
after a day and aborts unfinished multipart uploads.
"""

from __future__ import annotations

from typing import Any


class S3UploadStore:
    def __init__(self, bucket: str, *, region: str | None = None, client: Any = None) -> None:
        self.bucket = bucket
        if client is None:
            import boto3
            from botocore.config import Config

            # SigV4 presigned URLs name the regional endpoint (a bucket outside us-east-1 would
            # otherwise answer a redirect the caller's PUT cannot follow).
            client = boto3.client("s3", region_name=region, config=Config(signature_version="s3v4"))
        self._s3 = client

    def presign_put(self, key: str, size: int, content_type: str, expires_s: int) -> str:
        return self._s3.generate_presigned_url(
            "put_object", Params={"Bucket": self.bucket, "Key": key, "ContentLength": int(size),
                                  "ContentType": content_type},
            ExpiresIn=int(expires_s), HttpMethod="PUT")

    def read(self, key: str, max_bytes: int) -> bytes | None:
        from botocore.exceptions import ClientError

        try:
            obj = self._s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None
            raise
        if int(obj.get("ContentLength") or 0) > max_bytes:
            obj["Body"].close()
            raise ValueError(f"the uploaded object is over the {max_bytes}-byte limit")
        data = obj["Body"].read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"the uploaded object is over the {max_bytes}-byte limit")
        return data

    def delete(self, key: str) -> None:
        self._s3.delete_object(Bucket=self.bucket, Key=key)
