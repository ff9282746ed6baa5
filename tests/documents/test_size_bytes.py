"""A document's ``sizeBytes`` is its original's bytes as uploaded (what the Spectron client
shows as the file's size) and ``size`` the extracted text's UTF-8 bytes; both stay so across a
re-ingestion, which counts ``version`` up, as openapi.yaml says."""

from __future__ import annotations

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
