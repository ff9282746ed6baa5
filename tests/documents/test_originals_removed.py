"""A document's kept original (the uploaded file, ``originals/<id>`` in object storage) goes
like every derived copy: with document delete, with forget (``POST /forget`` hitting one of the
document's chunks, soft or ``purge``) and with scope forget (``POST /scopes/forget``). On both
record stores, and with both upload stores: the local directory and S3 (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import boto3
import pytest

from agent_memory.runtime import Runtime, get_runtime, set_runtime
from tests.conftest import InProcessApi, make_settings, serialise_moto

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
BUCKET = "agent-memory-originals-test"
HANDBOOK = ("# Travel\n\nThe Zanzibar office keeps the spare keys in the blue cabinet.\n\n"
            "# Food\n\nLunch is served at noon in the canteen.\n")


class Objects:
    """What the upload store holds, read behind the service's back."""

    def __init__(self, rt: Runtime, kind: str):
        self.rt, self.kind = rt, kind

    def keys(self) -> list[str]:
        if self.kind == "s3":
            listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket=BUCKET)
            return sorted(o["Key"] for o in listed.get("Contents", []))
        root = self.rt.settings.data_dir / "uploads"
        return sorted(f"{d}/{p.name}" for d in ("staging", "originals") if (root / d).exists()
                      for p in (root / d).iterdir())


@pytest.fixture(params=["local", "s3"])
def objects(request: pytest.FixtureRequest, store_kind: str, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Objects]:
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    serialise_moto(monkeypatch)
    settings = make_settings(tmp_path, store_kind)
    if request.param == "s3":
        settings = replace(settings, upload_bucket=BUCKET)
    with mock_aws():
        if store_kind == "dynamodb":
            create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), settings.table_name)
        if request.param == "s3":
            boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        rt = Runtime(settings)
        set_runtime(rt)
        try:
            yield Objects(rt, request.param)
        finally:
            rt.close()
            set_runtime(None)


@pytest.fixture
def api(objects: Objects) -> InProcessApi:
    return InProcessApi()


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def upload(api: InProcessApi, text: str = HANDBOOK, **fields) -> str:
    r = api.post(DOCS, {"title": "Handbook", "text": text, **fields})
    assert r.status == 202, r.text
    settle()
    doc_id = r.json()["id"]
    assert api.get(f"{DOCS}/{doc_id}").json()["status"] == "ready"
    assert api.get(f"{DOCS}/{doc_id}/raw").body == text.encode()
    return doc_id


def gone(api: InProcessApi, doc_id: str) -> None:
    r = api.get(f"{DOCS}/{doc_id}/raw")
    assert r.status == 404 and r.headers["content-type"] == "application/problem+json", r.text


def test_document_delete_removes_the_original(api, objects):
    doc_id = upload(api)
    other = upload(api, "# Other\n\nA second document stays.\n")
    assert objects.keys() == sorted([f"originals/{doc_id}", f"originals/{other}"])
    assert api.delete(f"{DOCS}/{doc_id}").status == 204
    gone(api, doc_id)
    assert objects.keys() == [f"originals/{other}"]  # the other document's original stays
    assert api.get(f"{DOCS}/{other}/raw").status == 200


@pytest.mark.parametrize("purge", [False, True], ids=["soft", "purge"])
def test_forgetting_a_chunk_removes_its_documents_original(api, objects, purge):
    doc_id = upload(api)
    other = upload(api, "# Other\n\nA second document about the weather stays.\n")
    r = api.post(f"{CTX}/forget", {"query": "Zanzibar office spare keys blue cabinet", "limit": 1,
                                   "minScore": 0.1, "purge": purge})
    assert r.status == 200, r.text
    assert [i["kind"] for i in r.json()["items"]] == ["chunk"] and r.json()["deleted"] == 1
    # the original held the forgotten text: it goes; the document keeps its other chunk
    gone(api, doc_id)
    assert api.get(f"{DOCS}/{doc_id}/raw").json()["code"] == "original_unavailable"
    chunks = api.get(f"{DOCS}/{doc_id}/chunks").json()["chunks"]
    assert [c["text"] for c in chunks] == ["Lunch is served at noon in the canteen."]
    assert objects.keys() == [f"originals/{other}"]
    assert api.delete(f"{DOCS}/{doc_id}").status == 204  # deleting it afterwards still works


def test_a_dry_run_forget_keeps_the_original(api, objects):
    doc_id = upload(api)
    r = api.post(f"{CTX}/forget", {"query": "Zanzibar office spare keys blue cabinet", "limit": 1,
                                   "minScore": 0.1, "dryRun": True})
    assert r.status == 200 and r.json()["items"], r.text
    assert api.get(f"{DOCS}/{doc_id}/raw").status == 200 and objects.keys() == [f"originals/{doc_id}"]


def test_forgetting_a_scope_removes_its_documents_and_their_originals(api, objects):
    inside = upload(api, scopes=[["org/acme/team/a"]])
    outside = upload(api, "# Elsewhere\n\nAnother team's notes.\n", scopes=[["org/acme/team/b"]])
    r = api.post(f"{CTX}/scopes/forget", {"path": "org/acme/team/a"})
    assert r.status == 200 and r.json()["forgotten"] >= 1, r.text
    assert api.get(f"{DOCS}/{inside}").status == 404
    gone(api, inside)
    assert objects.keys() == [f"originals/{outside}"]
    assert api.get(f"{DOCS}/{outside}/raw").status == 200


def test_verify_looks_again_in_object_storage_and_names_an_original_that_came_back(api, objects):
    """A purge's receipt names the original it removed; verify finds it gone (S3: HeadObject's
    404) and, when the object is there again (a delete that did not happen), names it."""
    doc_id = upload(api)
    r = api.delete(f"{DOCS}/{doc_id}")
    assert r.status == 204, r.text
    receipt_id = r.headers["x-erasure-receipt"]
    receipt = api.get(f"{CTX}/receipts/{receipt_id}").json()
    assert f"originals/{doc_id}" in receipt["originals"]
    assert f"originals/{doc_id}" not in objects.keys()
    verified = api.post(f"{CTX}/receipts/{receipt_id}/verify", {}).json()
    assert verified["clean"] is True and verified["checked"]["originals"] == 1, verified

    get_runtime().upload_store.write(f"originals/{doc_id}", b"still here", "text/markdown")
    verified = api.post(f"{CTX}/receipts/{receipt_id}/verify", {}).json()
    assert verified["clean"] is False
    assert {"place": "originals", "id": f"originals/{doc_id}", "state": "present"} in verified["remaining"]
