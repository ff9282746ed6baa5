"""CloudFormation's side of a custom resource, for the index step's tests: the presigned URL
a custom resource PUTs its response document to, and the events CloudFormation sends."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class CloudFormationSide:
    """Receives a custom resource's response document (CloudFormation's presigned URL)."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        side = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_PUT(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                side.responses.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/response?X-Amz-Signature=x"

    def event(self, kind: str, physical: str | None = None) -> dict[str, Any]:
        event = {"RequestType": kind, "ResponseURL": self.url, "StackId": "arn:aws:cloudformation:us-east-1:1:stack/s/1",
                 "RequestId": f"req-{len(self.responses)}", "LogicalResourceId": "SearchIndexSetup",
                 "ResourceType": "AWS::CloudFormation::CustomResource", "ResourceProperties": {}}
        if physical:
            event["PhysicalResourceId"] = physical
        return event
