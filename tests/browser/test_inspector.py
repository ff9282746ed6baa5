"""The inspector's main flows in a real browser against the local server: two facts that
correct each other on the entity timeline with the as-of slider, a streamed chat reply whose
citation is followed, a search, a document upload, and the pickers under a key."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from agent_memory.access.static_principals import parse_principals
from agent_memory.runtime import Runtime, set_runtime

CTX = "acme"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"


def seed(server: str, headers: dict[str, str] | None = None) -> None:
    with httpx.Client(base_url=server, timeout=30, headers=headers or {}) as c:
        for text, at in (("I live in Lisbon.", "2024-03-01T00:00:00Z"), ("I moved to Porto.", "2025-06-01T00:00:00Z")):
            r = c.post(f"/api/v1/{CTX}/facts", json={"text": text, "observedAt": at})
            assert r.status_code == 200, r.text


def open_inspector(page, server: str, key: str = "") -> None:
    page.goto(f"{server}/inspector/")
    if key:
        page.get_by_label("API key", exact=True).fill(key)
        page.get_by_label("API key", exact=True).dispatch_event("change")
    page.get_by_label("Context", exact=True).fill(CTX)
    page.get_by_role("button", name="Open").click()


def test_the_page_is_served_with_its_module_and_styles(server):
    with httpx.Client(base_url=server) as c:
        assert c.get("/inspector").status_code == 308
        r = c.get("/inspector/")
        assert r.status_code == 200 and "text/html" in r.headers["content-type"]
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert c.get("/inspector/inspector.js").headers["content-type"].startswith("text/javascript")
        assert c.get("/inspector/inspector.css").status_code == 200
        assert c.get("/inspector/nope.js").status_code == 404
        assert c.get("/inspector/../openapi.yaml").status_code == 404
        for icon in ("/favicon.ico", "/inspector/favicon.ico"):  # browsers ask the root for it
            r = c.get(icon)
            assert r.status_code == 200 and r.headers["content-type"] == "image/x-icon"
            assert r.content[:4] == b"\x00\x00\x01\x00" and len(r.content) == int(r.headers["content-length"])
        assert c.post("/favicon.ico").status_code == 405


def test_correction_timeline_and_as_of_slider(page, server):
    seed(server)
    with httpx.Client(base_url=server, timeout=30) as c:  # a second key, for a fuller picture
        for text, at in (("I work at Acme.", "2024-01-10T00:00:00Z"), ("I work at Globex.", "2024-11-01T00:00:00Z"),
                         ("I like hiking.", "2024-06-01T00:00:00Z")):
            assert c.post(f"/api/v1/{CTX}/facts", json={"text": text, "observedAt": at}).status_code == 200
    open_inspector(page, server)
    counts = page.locator("#state-counts")
    counts.get_by_text(re.compile(r"\d+ entities")).wait_for()
    page.locator('#state-body a[data-entity="entity:person/user"]').click()
    bars = page.locator('#timeline g.bar[data-key="location"]')
    bars.first.wait_for()
    assert sorted(bars.evaluate_all("els => els.map(e => e.dataset.value)")) == ["Lisbon", "Porto"]
    assert page.locator('#timeline g.bar.current[data-key="location"]').get_attribute("data-value") == "Porto"
    lisbon, porto = (page.locator(f'#timeline g.bar[data-value="{v}"]').get_attribute("data-attr")
                     for v in ("Lisbon", "Porto"))
    assert page.locator(f'#timeline path.supersession[data-from="{lisbon}"][data-to="{porto}"]').count() == 1
    attrs = page.locator("#asof-attributes")
    assert "Porto" in attrs.inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "entity-timeline.png"))
    slider = page.get_by_label("As of", exact=True)
    # Drag to December 2024: Lisbon (not yet Porto) and the job at Globex were true then.
    slider.evaluate("(el, t) => { el.value = el.positionOf(t); el.dispatchEvent(new Event('input', {bubbles: true})); }",
                    datetime(2024, 12, 1, tzinfo=UTC).timestamp() * 1000)
    expect(attrs).to_have_attribute("data-asof", re.compile(r"^2024-12-01"))
    assert "Lisbon" in attrs.inner_text() and "Porto" not in attrs.inner_text()
    assert "Globex" in attrs.inner_text() and "Acme" not in attrs.inner_text()
    slider.focus()
    slider.press("End")
    expect(attrs).to_have_attribute("data-asof", "now")
    assert "Porto" in attrs.inner_text()


def test_chat_streams_and_a_citation_is_followed(page, server):
    seed(server)
    open_inspector(page, server)
    page.get_by_role("tab", name="Chat").click()
    page.get_by_label("Message", exact=True).fill("Where do I live?")
    page.get_by_role("button", name="Send").click()
    reply = page.locator(".chat-turn .reply")
    page.locator(".chat-turn .citations").wait_for()
    assert "Porto" in reply.inner_text()
    assert int(reply.get_attribute("data-deltas") or 0) >= 1  # text arrived as SSE deltas
    cited = page.locator(".citations li").first
    cited_id = cited.get_attribute("data-id")
    cited.locator("a.cited").click()
    bar = page.locator(f'#timeline g.bar[data-attr="{cited_id}"]')
    bar.wait_for()
    assert bar.get_attribute("data-value") == "Porto"
    expect(bar).to_be_focused()
    # The inline marker opens the same source (test_inspector_sources.py covers it in full).
    page.get_by_role("tab", name="Chat").click()
    reply.locator(f'a.marker[data-id="{cited_id}"]').first.click()
    expect(page.locator(f'#timeline g.bar[data-attr="{cited_id}"]')).to_be_focused()


def test_search_shows_hits_with_scores_kinds_and_trace(page, server):
    seed(server)
    open_inspector(page, server)
    page.get_by_role("tab", name="Search").click()
    page.get_by_label("Query", exact=True).fill("Where do I live?")
    page.get_by_role("button", name="Search").click()
    rows = page.locator("#search-hits tbody tr")
    rows.first.wait_for()
    assert rows.count() >= 1
    assert re.fullmatch(r"\d+\.\d{4}", rows.first.locator("td.num").inner_text())
    assert "Porto" in page.locator("#search-hits").inner_text()
    page.locator("#search-trace summary").click()
    assert "{" in page.locator("#search-trace pre").inner_text()


def test_upload_a_document_and_read_its_chunks(page, server, tmp_path: Path):
    doc = tmp_path / "handbook.md"
    doc.write_text("# Travel\n\nBook trains, not flights.\n\n# Expenses\n\nReceipts within 30 days.\n", encoding="utf-8")
    open_inspector(page, server)
    page.get_by_role("tab", name="Documents").click()
    page.get_by_label("File", exact=True).set_input_files(str(doc))
    page.get_by_label("Title", exact=True).fill("Handbook")
    page.get_by_role("button", name="Upload", exact=True).click()
    page.locator("#upload-status").get_by_text(re.compile(r"Handbook: ready")).wait_for()
    assert page.locator("#upload-progress").get_attribute("value") == "100"
    page.locator("#document-list li").get_by_text("Handbook").wait_for()
    chunks = page.locator("#chunk-list li")
    chunks.first.wait_for()
    assert "Book trains" in page.locator("#chunk-list").inner_text()


def test_a_file_over_the_synchronous_cap_goes_through_the_presigned_flow(page, server, tmp_path: Path):
    """A ~4 MB file: POST /documents answers 413 naming POST /documents/uploads, and the page
    switches to the presigned flow (the local server's own signed URL), then completes it."""
    body = "\n\n".join(f"## Section {i}\n\n" + f"Policy line {i} says what it says. " * 60 for i in range(1900))
    data = ("# Big policy\n\n" + body).encode()
    assert 3_900_000 < len(data) < 5 * 1024 * 1024
    doc = tmp_path / "big.md"
    doc.write_bytes(data)
    open_inspector(page, server)
    page.get_by_role("tab", name="Documents").click()
    page.get_by_label("File", exact=True).set_input_files(str(doc))
    with page.expect_response(lambda r: r.url.endswith("/documents") and r.request.method == "POST") as first:
        page.get_by_role("button", name="Upload", exact=True).click()
    assert first.value.status == 413
    page.locator("#upload-status").get_by_text(re.compile(r"Big policy: ready")).wait_for(timeout=180_000)
    listed = httpx.get(f"{server}/api/v1/{CTX}/documents").json()["documents"]
    [big] = [d for d in listed if d["title"] == "Big policy"]
    assert big["status"] == "ready" and big["chunksDone"] == big["chunksTotal"] > 100
    assert httpx.get(f"{server}/api/v1/{CTX}/documents/{big['id']}/raw", timeout=30).content == data


# --- under keys: the page shows only what the key may read --------------------------------

KEYS = {"alice": "key-alice-0000000000", "bob": "key-bob-000000000000"}


@pytest.fixture
def keyed(runtime: Runtime) -> Iterator[Runtime]:
    principals = [
        {"key": KEYS["alice"], "principal": "alice", "contexts": [CTX], "read_region": ["user/alice"],
         "write_region": ["user/alice"], "default_write_scope": "user/alice"},
        {"key": KEYS["bob"], "principal": "bob", "contexts": [CTX, "bobs"], "read_region": ["user/bob"],
         "write_region": ["user/bob"], "default_write_scope": "user/bob"},
    ]
    rt = Runtime(dataclasses.replace(runtime.settings, principals=parse_principals(None, principals)))
    set_runtime(rt)
    yield rt
    set_runtime(runtime)


def test_a_key_sees_only_its_own_memory_and_contexts(keyed, page, server):
    seed(server, {"Authorization": f"Bearer {KEYS['bob']}"})
    page.goto(f"{server}/inspector/")
    page.get_by_label("API key", exact=True).fill(KEYS["alice"])
    page.get_by_label("API key", exact=True).dispatch_event("change")
    expect(page.locator("#context-options option")).to_have_count(1)
    assert page.locator("#context").input_value() == CTX  # the only context alice's key may use
    page.get_by_role("button", name="Open").click()
    page.locator("#state-counts").get_by_text(re.compile(r"^0 entities")).wait_for()
    page.get_by_role("tab", name="Sessions & threads").click()
    page.locator("#session-list li.hint").wait_for()  # bob's sessions are not listed
    page.get_by_label("API key", exact=True).fill(KEYS["bob"])
    page.get_by_role("button", name="Open").click()
    page.locator("#session-list li button").first.wait_for()
    assert page.locator("#session-list li button").count() == 2


def test_the_only_context_never_fills_the_field_the_user_is_typing_in(keyed, page, server):
    """The contexts list lands while the user has the Context field focused: what they type
    stays what they typed (filled under their cursor, it once read "acmeacme")."""
    held, released = [], []
    page.route(re.compile(r"/api/v1/contexts\?"),
               lambda route: route.continue_() if released else held.append(route))
    page.goto(f"{server}/inspector/")
    page.get_by_label("API key", exact=True).fill(KEYS["alice"])
    page.get_by_label("API key", exact=True).dispatch_event("change")
    page.get_by_label("Context", exact=True).focus()
    for _ in range(100):  # the page's first ask (no key) and those the key's change made
        if len(held) >= 2:
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)
    assert len(held) >= 2, held
    released.append(True)
    for route in held:
        route.continue_()
    expect(page.locator("#context-options option")).to_have_count(1)
    page.keyboard.type(CTX)
    assert page.locator("#context").input_value() == CTX
    page.get_by_role("button", name="Open").click()
    page.locator("#state-counts").get_by_text(re.compile(r"^0 entities")).wait_for()


def test_this_is_wrong_corrects_a_value_and_forgets_another(page, server):
    seed(server)
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.post(f"/api/v1/{CTX}/facts", json={"text": "I like hiking."}).status_code == 200
    open_inspector(page, server)
    page.locator('#state-body a[data-entity="entity:person/user"]').click()
    attrs = page.locator("#asof-attributes")
    attrs.get_by_text("Porto").wait_for()
    page.get_by_role("button", name="This is wrong: location Porto").click()
    page.get_by_label("Correct value of location").fill("Braga")
    page.get_by_label("Why it is wrong").fill("misheard")
    page.get_by_role("button", name="Save correction").click()
    expect(page.locator("#status")).to_have_text("Corrected location: Porto → Braga")
    expect(page.locator('#timeline g.bar.current[data-key="location"]')).to_have_attribute("data-value", "Braga")
    assert page.locator('#timeline g.bar[data-key="location"][data-value="Porto"]').count() == 1  # history kept
    page.get_by_role("button", name="This is wrong: likes hiking").click()
    page.get_by_role("button", name="Forget it").click()
    expect(page.locator("#status")).to_have_text("Forgot likes: hiking")
    expect(attrs).not_to_contain_text("hiking")
    with httpx.Client(base_url=server, timeout=30) as c:
        history = c.get(f"/api/v1/{CTX}/entities/person/user/history/location").json()["history"]
    assert [h["value"] for h in history][-2:] == ["Porto", "Braga"]


def test_a_retracted_value_is_marked_on_the_timeline(page, server):
    """A backdated move covers the old value's whole window: its bar says it was retracted."""
    with httpx.Client(base_url=server, timeout=30) as c:
        for text, at in (("I live in London.", "2024-05-10T09:00:00Z"),
                         ("I moved to Berlin last month.", "2024-05-20T09:00:00Z")):
            assert c.post(f"/api/v1/{CTX}/facts", json={"text": text, "observedAt": at}).status_code == 200
    open_inspector(page, server)
    page.locator('#state-body a[data-entity="entity:person/user"]').click()
    london = page.locator('#timeline g.bar[data-key="location"][data-value="London"]')
    london.wait_for()
    expect(london).to_have_class(re.compile(r"\bretracted\b"))
    expect(london).to_have_attribute("aria-label", "location = London, retracted by a later statement")
    expect(page.locator('#timeline g.bar.current[data-key="location"]')).to_have_attribute("data-value", "Berlin")
