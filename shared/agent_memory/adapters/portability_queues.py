"""Where export and import jobs go (``services.operations.portability_jobs``): SQS when deployed
(the administration function's worker, ``PortabilityWorkerFunction``, consumes the queue), or a
one-thread worker in this process locally. Both run ``PortabilityJobs.run``."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agent_memory.kernel.errors import ServiceBusy

log = logging.getLogger("agent_memory.portability")

QUEUE_RETRY_AFTER_S = 5


class InProcessPortabilityQueue:
    """A job runs in a background thread, one at a time (each holds a context in memory); one
    that raises is run again, as SQS would redeliver it, until the job row says it failed."""

    def __init__(self, run: Callable[[Any], str], attempts: int = 3):
        self._run_job = run
        self._attempts = attempts
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="portability")
        self._lock = threading.Lock()
        self._running: set[Future] = set()

    def send(self, message: Any) -> None:
        future = self._pool.submit(self._run, message)
        with self._lock:
            self._running.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future) -> None:
        with self._lock:
            self._running.discard(future)

    def _run(self, message: Any) -> str:
        for attempt in range(1, self._attempts + 1):
            try:
                return self._run_job(message)
            except Exception:
                log.exception("portability job %s: attempt %d failed", message.job_id, attempt)
        return "failed"

    def join(self, timeout: float | None = None) -> None:
        """Wait for the jobs sent so far (tests, shutdown)."""
        with self._lock:
            running = list(self._running)
        for future in running:
            future.result(timeout=timeout)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)


class SqsPortabilityQueue:
    def __init__(self, queue_url: str, region: str | None = None, client: Any = None):
        self.queue_url = queue_url
        if client is None:
            import boto3

            client = boto3.client("sqs", region_name=region)
        self._sqs = client

    def send(self, message: Any) -> None:
        """A queue that refuses, throttles or cannot be reached is a 503 with Retry-After."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(message.to_message()))
        except (ClientError, BotoCoreError) as exc:
            log.warning("the portability queue refused job %s (%s)", message.job_id, type(exc).__name__)
            raise ServiceBusy("the export and import job queue cannot take the job now; retry",
                              code="queue_unavailable", retry_after=QUEUE_RETRY_AFTER_S) from exc
