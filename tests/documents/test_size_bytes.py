"""A document's ``sizeBytes`` is its original's bytes as uploaded (what the Spectron client
shows as the file's size) and ``size`` the extracted text's UTF-8 bytes; both stay so across a
re-ingestion, which counts ``version`` up, as openapi.yaml says."""

from __future__ import annotations

from openapi_schemas import validate

from agent_memory.runtime import get_runtime

DOCS = "/api/v1/acme/documents"
PAGE = ("<!DOCTYPE html><html><head><title>Refunds</title><style>p { color: #333; }</style></head>"
        "<body><h1>Refunds</h1><p>Refunds are paid within <b>14 days</b> of a return.</p></body></html>")


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def test_size_bytes_is_the_original_and_size_the_extracted_text(client):
    raw = PAGE.encode("utf-8")
    r = client.post(DOCS, files={"file": ("refunds.html", raw, "text/html")})
    assert r.status_code == 202, r.text
    settle()
    doc = client.get(f"{DOCS}/{r.json()['id']}").json()
    assert doc["status"] == "ready" and doc["format"] == "html"
    assert doc["sizeBytes"] == len(raw)
    text = "".join(c["text"] for c in client.get(f"{DOCS}/{doc['id']}/chunks").json()["chunks"])
    assert "14 days" in text and "<b>" not in text
    assert doc["size"] < doc["sizeBytes"]  # markup and the style sheet are not text
    listed = client.get(DOCS).json()["documents"]
    assert [(d["size"], d["sizeBytes"]) for d in listed] == [(doc["size"], doc["sizeBytes"])]
    assert doc["version"] == 1
    assert client.put(f"{DOCS}/{doc['id']}").status_code == 202
    settle()
    again = client.get(f"{DOCS}/{doc['id']}").json()
    assert again["version"] == 2 and (again["size"], again["sizeBytes"]) == (doc["size"], doc["sizeBytes"])


def test_a_document_query_answer_matches_its_typed_schema(client):
    r = client.post(DOCS, files={"file": ("refunds.html", PAGE.encode("utf-8"), "text/html")})
    settle()
    found = client.post(f"{DOCS}/query", json={"query": "refunds 14 days", "k": 3})
    assert found.status_code == 200
    body = found.json()
    validate("DocumentQueryResponse", body)  # the typed chunk, document and evidence
    top = body["results"][0]
    assert top["document"]["id"] == r.json()["id"] and top["document"]["sizeBytes"] == len(PAGE.encode("utf-8"))
    assert "14 days" in top["chunk"]["text"] and top["graphEvidence"] is None
