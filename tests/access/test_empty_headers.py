"""One rule for the three optional headers (``X-Memory-Partition``, ``X-Spectron-On-Behalf-Of``,
``Idempotency-Key``): absent means absent; present and empty is a 400 that writes nothing, as
openapi.yaml states (pattern or minLength). A schemathesis finding: an empty on-behalf-of
header was taken as none."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("header", ["X-Memory-Partition", "X-Spectron-On-Behalf-Of", "Idempotency-Key"])
def test_an_empty_header_is_400_and_writes_nothing(any_api, header):
    r = any_api.post("/api/v1/acme/facts", {"text": "Ada likes tea", "infer": "none"}, headers={header: ""})
    assert r.status == 400, r.text
    assert r.json()["field"] in (header, "idempotency_key")
    assert any_api.get("/api/v1/acme/sessions").json()["items"] == []


def test_an_on_behalf_of_naming_no_principal_is_400(any_api):
    r = any_api.get("/api/v1/acme/me", headers={"X-Spectron-On-Behalf-Of": "principal:"})
    assert r.status == 400, r.text


@pytest.mark.parametrize("value", ["-p", "a" * 65, "p/1", "p 1"])
def test_a_partition_off_its_pattern_is_400_on_a_read_too(any_api, value):
    r = any_api.get("/api/v1/acme/me", headers={"X-Memory-Partition": value})
    assert r.status == 400, r.text


def test_absent_headers_are_absent(any_api):
    r = any_api.get("/api/v1/acme/me")
    assert r.status == 200, r.text
    r = any_api.post("/api/v1/acme/facts", {"text": "Ada likes tea", "infer": "none"})
    assert r.status in (200, 201, 202), r.text
    assert any_api.get("/api/v1/acme/sessions").json()["items"] != []  # what the 400s above must not leave


@pytest.mark.parametrize("path, body", [("/api/v1/acme/reflect", {"query": "tea", "persist": False}),
                                        ("/api/v1/acme/consolidate", {"dryRun": True}),
                                        ("/api/v1/acme/elaborate", {"dryRun": True})])
def test_a_bad_idempotency_key_is_400_where_the_call_runs_without_one(any_api, path, body):
    # a dry run or a reflection not persisted records no replay, but the route documents the header
    r = any_api.post(path, body, headers={"Idempotency-Key": "k" * 256})
    assert r.status == 400, r.text
    assert r.json()["field"] == "Idempotency-Key"
    assert any_api.post(path, body, headers={"Idempotency-Key": "k" * 255}).status == 200
