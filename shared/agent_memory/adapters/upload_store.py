"""Document object storage (``ports.UploadStore``): S3 when deployed, a directory locally.

Keys (chosen by ``services.documents.content``): ``staging/<document id>`` for a presigned
upload (the ingestion worker reads it once and deletes it; the bucket's one-day lifecycle rule,
filtered to ``staging/``, removes what an abandoned upload left) and ``originals/<document id>``
for the bytes as uploaded (kept until the document is deleted, forgotten or purged).

S3 (``S3UploadStore``): the documents function signs a ``PUT`` for one key with the exact
``Content-Length`` the caller declared, so S3 refuses any other size. The bucket (template.yaml
``UploadBucket``) encrypts at rest (SSE-S3, and each write asks for it), blocks public access
and aborts unfinished multipart uploads.

Local (``LocalUploadStore``, under ``<data dir>/uploads``): the same flow without AWS. A
presigned URL is a path on the local server itself (``/_local/uploads/<key>``) whose query
carries the size, content type and expiry, HMAC-signed with a secret kept in the data
directory; ``accept_put`` (called by the local gateway) checks signature, expiry, size and type
before writing. Objects are files written atomically (temporary file, then rename), readable by
the owner only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

LOCAL_UPLOAD_PATH = "/_local/uploads/"
_KEY = re.compile(r"^(?:staging|originals|exports|imports)/[A-Za-z0-9_-]{1,128}$")
#: Objects the local server hands out by a signed GET (an export job's stream); originals are
#: served by the API itself.
_SIGNED_GET = ("exports/",)


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

    def presign_get(self, key: str, expires_s: int, content_type: str, filename: str | None = None) -> str | None:
        disposition = f'attachment; filename="{filename}"' if filename else "attachment"
        return self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key, "ResponseContentType": content_type,
                                  "ResponseContentDisposition": disposition},
            ExpiresIn=int(expires_s), HttpMethod="GET")

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

    def write(self, key: str, data: bytes, content_type: str) -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type,
                            ServerSideEncryption="AES256")

    def delete(self, key: str) -> None:
        self._s3.delete_object(Bucket=self.bucket, Key=key)

    def exists(self, key: str) -> bool:
        # HeadObject answers 404 for a missing key only to a role that may list the bucket
        # (else 403): the verifying function holds s3:ListBucket (tests/deploy/iam_table.py).
        from botocore.exceptions import ClientError

        try:
            self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return False
            raise
        return True


class UploadRefused(Exception):
    """A local presigned PUT that cannot be taken: ``status`` and why."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class LocalUploadStore:
    """``ports.UploadStore`` in a directory; presigned URLs point at the local server."""

    def __init__(self, root: Path, *, secret: bytes | None = None) -> None:
        self.root = Path(root)
        self._secret = secret

    # --- signing ------------------------------------------------------------------------

    def _key_secret(self) -> bytes:
        if self._secret is None:
            path = self.root / ".upload-secret"
            if not path.exists():
                self.root.mkdir(parents=True, exist_ok=True)
                fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as out:
                    out.write(secrets.token_hex(32))
                os.replace(path.with_suffix(".tmp"), path)
            self._secret = path.read_text().strip().encode()
        return self._secret

    def _signature(self, key: str, size: int, content_type: str, expires: int) -> str:
        message = f"PUT\n{key}\n{size}\n{content_type}\n{expires}".encode()
        return hmac.new(self._key_secret(), message, hashlib.sha256).hexdigest()

    def presign_put(self, key: str, size: int, content_type: str, expires_s: int) -> str:
        _check_key(key)
        expires = int(time.time()) + int(expires_s)
        query = urlencode({"size": int(size), "type": content_type, "expires": expires,
                           "signature": self._signature(key, int(size), content_type, expires)})
        return f"{LOCAL_UPLOAD_PATH}{quote(key)}?{query}"

    def presign_get(self, key: str, expires_s: int, content_type: str, filename: str | None = None) -> str | None:
        if not key.startswith(_SIGNED_GET):
            return None  # the local server has no payload limit: the API serves the bytes itself
        _check_key(key)
        expires = int(time.time()) + int(expires_s)
        name = filename or key.rsplit("/", 1)[-1]
        query = urlencode({"type": content_type, "name": name, "expires": expires,
                           "signature": self._get_signature(key, content_type, name, expires)})
        return f"{LOCAL_UPLOAD_PATH}{quote(key)}?{query}"

    def _get_signature(self, key: str, content_type: str, name: str, expires: int) -> str:
        message = f"GET\n{key}\n{content_type}\n{name}\n{expires}".encode()
        return hmac.new(self._key_secret(), message, hashlib.sha256).hexdigest()

    def serve_get(self, key: str, raw_query: str) -> tuple[bytes, str, str]:
        """The bytes, content type and file name of a signed local GET (an export job's stream),
        or ``UploadRefused`` (403: bad or expired signature; 404: nothing there)."""
        if not _KEY.match(key) or not key.startswith(_SIGNED_GET):
            raise UploadRefused(404, "no such object")
        query = {k: v[0] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
        try:
            expires, content_type, signature = int(query["expires"]), query["type"], query["signature"]
            name = query["name"]
        except (KeyError, ValueError):
            raise UploadRefused(403, "the download URL is not signed") from None
        if not hmac.compare_digest(signature, self._get_signature(key, content_type, name, expires)):
            raise UploadRefused(403, "the download URL's signature does not match")
        if time.time() > expires:
            raise UploadRefused(403, "the download URL has expired; read the job again for a new one")
        try:
            return self._path(key).read_bytes(), content_type, name
        except FileNotFoundError:
            raise UploadRefused(404, "no such object (it expired)") from None

    def accept_put(self, key: str, raw_query: str, content_type: str | None, body: bytes) -> None:
        """Take a PUT to a presigned local URL, or raise ``UploadRefused`` (403: bad or expired
        signature; 400: another size or content type than signed)."""
        if not _KEY.match(key):
            raise UploadRefused(404, "no such upload")
        query = {k: v[0] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
        try:
            size, expires = int(query["size"]), int(query["expires"])
            signed_type, signature = query["type"], query["signature"]
        except (KeyError, ValueError):
            raise UploadRefused(403, "the upload URL is not signed") from None
        if not hmac.compare_digest(signature, self._signature(key, size, signed_type, expires)):
            raise UploadRefused(403, "the upload URL's signature does not match")
        if time.time() > expires:
            raise UploadRefused(403, "the upload URL has expired; create a new upload")
        if len(body) != size:
            raise UploadRefused(400, f"the URL is signed for exactly {size} bytes; {len(body)} were sent")
        if (content_type or "").split(";", 1)[0].strip().lower() != signed_type.lower():
            raise UploadRefused(400, f"the URL is signed for Content-Type {signed_type}")
        self.write(key, body, signed_type)

    # --- objects ------------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        _check_key(key)
        return self.root / key

    def read(self, key: str, max_bytes: int) -> bytes | None:
        path = self._path(key)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        if size > max_bytes:
            raise ValueError(f"the uploaded object is over the {max_bytes}-byte limit")
        return path.read_bytes()

    def write(self, key: str, data: bytes, content_type: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()


def _check_key(key: str) -> None:
    if not _KEY.match(key):
        raise ValueError(f"not an upload key: {key!r}")
