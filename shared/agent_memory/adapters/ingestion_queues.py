"""Where document ingestion jobs go: an in-process worker pool (local runs, tests) or SQS
(deployed; the ``ingestion`` function consumes the queue). Both run the same worker,
``services.ingestion.DocumentIngestion.process``."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agent_memory.kernel.errors import ServiceBusy

log = logging.getLogger("agent_memory.ingestion")

QUEUE_RETRY_AFTER_S = 5  # what a refused enqueue tells the caller to wait
LOCAL_WORKERS = 2  # documents ingested at once in one local process (each with its own model-call pool)


class InProcessIngestionQueue:
    """A background queue in this process: ``send`` returns at once, a small pool runs the
    jobs. An interrupted job is run again, as SQS would redeliver it."""

    def __init__(self, process: Callable[[Any], str], interrupted: type[Exception],
                 workers: int = LOCAL_WORKERS):
        self._process = process
        self._interrupted = interrupted
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest")
        self._lock = threading.Lock()
        self._running: set[Future] = set()

    def send(self, job: Any) -> None:
        future = self._pool.submit(self._run, job)
        with self._lock:
            self._running.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future) -> None:
        with self._lock:
            self._running.discard(future)

    def _run(self, job: Any) -> str:
        for _ in range(3):
            try:
                return self._process(job)
            except self._interrupted:
                continue
            except Exception:
                log.exception("ingestion of document %s failed", job.document_id)
                raise
        return "interrupted"

    def idle(self) -> bool:
        with self._lock:
            return not self._running

    def join(self, timeout: float | None = None) -> None:
        """Wait for the jobs sent so far (tests, shutdown)."""
        with self._lock:
            running = list(self._running)
        for future in running:
            try:
                future.result(timeout=timeout)
            except Exception:  # logged by _run
                pass

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)


class SqsIngestionQueue:
    def __init__(self, queue_url: str, region: str | None = None, client: Any = None):
        self.queue_url = queue_url
        if client is None:
            import boto3

            client = boto3.client("sqs", region_name=region)
        self._sqs = client

    def send(self, job: Any) -> None:
        """Queue one job; a queue that refuses, throttles or cannot be reached raises
        ``ServiceBusy`` (503 with Retry-After), so the caller stores nothing or keeps the
        document visibly pending for a retried request."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(job.to_message()))
        except (ClientError, BotoCoreError) as exc:
            code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
            log.warning("the ingestion queue refused document %s (%s)", job.document_id, code)
            raise ServiceBusy("the document ingestion queue cannot take the job now; retry",
                              code="queue_unavailable", retry_after=QUEUE_RETRY_AFTER_S) from exc
