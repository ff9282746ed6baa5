"""The inspector shows what ``/state`` returns, all of it, in a real browser at a desktop
(1400 px) and a phone (420 px) width: every attribute, relation and action in the category
``/state`` puts it in (also when that differs from its entity's), each value's scope where
values of one key coexist across scopes, a tab bar that wraps, and no ``null`` or
``undefined`` text in chat or documents; relations and actions follow the as-of slider;
the page has a favicon."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

CTX = "acme"
CATS = ("identity", "knowledge", "context")
KINDS = ("attributes", "relations", "actions")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
NO_LITERALS = re.compile(r"\b(null|undefined|NaN)\b")


def post(c: httpx.Client, text: str, at: str | None = None) -> dict:
    body: dict = {"text": text}
    if at:
        body["observedAt"] = at
    r = c.post(f"/api/v1/{CTX}/facts", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def seed_mixed(server: str) -> dict:
    """Five attributes of three categories on one identity entity, a relation, an action
    (a context-category fact of that entity) and two current locations in two scopes (a chat
    in a session scoped as the README's example is)."""
    with httpx.Client(base_url=server, timeout=30) as c:
        for text in ("I work at Globex.", "I like hiking.", "I speak Spanish.", "My mood is great.",
                     "My current project is Apollo.", "My sister is Emma.", "I visited Rome last week.",
                     "I moved to Madrid."):
            post(c, text)
        session = c.post(f"/api/v1/{CTX}/sessions", json={"scopes": ["org/acme/user/alice"]}).json()["id"]
        r = c.post(f"/api/v1/{CTX}/chat", json={"message": "I moved to Berlin.", "sessionId": session})
        assert r.status_code == 200, r.text
        return c.get(f"/api/v1/{CTX}/state", params={"limit": 500}).json()


def open_inspector(page, server: str) -> None:
    page.goto(f"{server}/inspector/")
    page.get_by_label("Context", exact=True).fill(CTX)
    page.get_by_role("button", name="Open").click()


@pytest.mark.parametrize("width", [1400, 420])
def test_the_state_panel_shows_every_fact_of_state_in_its_category(page, server, width):
    state = seed_mixed(server)
    assert state["knowledge"]["attributes"] and state["context"]["attributes"] and state["context"]["actions"]
    assert not state["context"]["entities"]  # the context facts belong to an identity entity
    page.set_viewport_size({"width": width, "height": 900})
    open_inspector(page, server)
    page.locator("#state-body section.category").first.wait_for()
    for cat in CATS:
        section = page.locator(f"#state-{cat}")
        for kind in KINDS:
            want = sorted(row["id"] for row in state[cat][kind])
            shown = section.locator(f'[data-kind="{kind[:-1]}"]').evaluate_all("els => els.map(e => e.dataset.id)")
            assert sorted(shown) == want, (cat, kind)
        total = sum(len(state[cat][k]) for k in ("entities", *KINDS))
        badge = section.locator("h3 .badge")
        assert badge.get_attribute("data-count") == str(total)
        if total:
            expect(section).not_to_contain_text("Nothing here")
    entities = sum(len(state[c]["entities"]) for c in CATS)
    attributes = sum(len(state[c]["attributes"]) for c in CATS)
    assert page.locator("#state-counts").inner_text().startswith(f"{entities} entities · {attributes} attributes")
    # Berlin (scoped) and Madrid (unscoped) are both current: each says its scope; one-scope keys do not.
    locations = {a["value"]: a for a in state["identity"]["attributes"] if a["key"] == "location"}
    assert set(locations) == {"Berlin", "Madrid"}
    berlin = page.locator(f'#state-body [data-id="{locations["Berlin"]["id"]}"] .scope')
    assert berlin.inner_text() == "scope: org/acme/user/alice"
    assert page.locator(f'#state-body [data-id="{locations["Madrid"]["id"]}"] .scope').inner_text() == "scope: unscoped"
    employer = next(a for a in state["identity"]["attributes"] if a["key"] == "employer")
    assert page.locator(f'#state-body [data-id="{employer["id"]}"] .scope').count() == 0
    assert not NO_LITERALS.search(page.locator("main").inner_text())
    # The tab bar wraps inside the viewport instead of running off it.
    tabs = page.locator('.tabs [role="tab"]')
    for i in range(tabs.count()):
        box = tabs.nth(i).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, tabs.nth(i).inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"state-panel-{width}.png"), full_page=True)
    # The entity page: both locations current, each with its scope, in the table and the timeline.
    page.locator('#state-body a[data-entity="entity:person/user"]').click()
    table = page.locator("#asof-attributes")
    expect(table.locator(f'tr[data-attr="{locations["Berlin"]["id"]}"] .scope')).to_have_text("scope: org/acme/user/alice")
    expect(table.locator(f'tr[data-attr="{locations["Madrid"]["id"]}"] .scope')).to_have_text("scope: unscoped")
    scoped = page.locator('#timeline g.bar[data-key="location"]').evaluate_all(
        "els => els.map(e => [e.dataset.value, e.dataset.scope])")
    assert sorted(scoped) == [["Berlin", "org/acme/user/alice"], ["Madrid", "unscoped"]]
    assert not NO_LITERALS.search(page.locator("main").inner_text())


def test_relations_and_actions_follow_the_as_of_slider(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        post(c, "I work at Acme.", "2024-01-10T00:00:00Z")
        post(c, "My sister is Emma.", "2025-03-01T00:00:00Z")
        post(c, "I visited Rome last week.", "2025-06-08T00:00:00Z")
        detail = c.get(f"/api/v1/{CTX}/entities/person/user").json()
    assert detail["relations"]
    open_inspector(page, server)
    page.locator('#state-body a[data-entity="entity:person/user"]').click()
    relations, actions = page.locator("#entity-relations"), page.locator("#entity-actions")
    expect(relations).to_contain_text("sister")
    expect(actions).to_contain_text("Rome")
    slider = page.get_by_label("As of", exact=True)

    def slide(when: datetime) -> None:
        slider.evaluate("(el, t) => { el.value = el.positionOf(t); el.dispatchEvent(new Event('input', {bubbles: true})); }",
                        when.timestamp() * 1000)

    slide(datetime(2024, 6, 1, tzinfo=UTC))  # before the sister and the trip
    expect(relations).to_have_attribute("data-asof", re.compile(r"^2024-06-01"))
    expect(actions).to_have_attribute("data-asof", re.compile(r"^2024-06-01"))
    assert "sister" not in relations.inner_text() and "Rome" not in actions.inner_text()
    slide(datetime(2025, 4, 1, tzinfo=UTC))  # the sister, not yet the trip
    expect(actions).to_have_attribute("data-asof", re.compile(r"^2025-04-01"))
    assert "sister" in relations.inner_text() and "Rome" not in actions.inner_text()
    slider.focus()
    slider.press("End")
    expect(actions).to_have_attribute("data-asof", "now")
    assert "sister" in relations.inner_text() and "Rome" in actions.inner_text()
    assert not NO_LITERALS.search(page.locator("main").inner_text())


def test_chat_without_memory_updates_prints_no_null(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        post(c, "I live in Lisbon.")
    open_inspector(page, server)
    page.get_by_role("tab", name="Chat").click()
    for message in ("Where do I live?", "I moved to Porto."):
        page.get_by_label("Message", exact=True).fill(message)
        page.get_by_role("button", name="Send").click()
        expect(page.locator(".chat-turn .reply.streaming")).to_have_count(0)
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
    turns = page.locator(".chat-turn")
    expect(turns).to_have_count(2)
    turns.nth(0).locator(".citations, .hint").first.wait_for()
    assert turns.nth(0).locator(".updates").count() == 0  # a question learns nothing
    assert "Porto" in turns.nth(1).locator(".updates").inner_text()
    for i in range(2):
        assert not NO_LITERALS.search(turns.nth(i).inner_text()), turns.nth(i).inner_text()
    # nor in the panels that list what the chat wrote
    page.get_by_role("tab", name="Sessions & threads").click()
    page.locator("#session-list li button").first.click()
    page.locator("#turn-list li").first.wait_for()
    page.get_by_role("tab", name="Search").click()
    page.get_by_label("Query", exact=True).fill("Where do I live?")
    page.get_by_role("button", name="Search").click()
    page.locator("#search-hits tbody tr").first.wait_for()
    for panel in ("#panel-sessions", "#panel-search"):
        text = page.locator(panel).inner_text()
        assert not NO_LITERALS.search(text.split("Ranking trace")[0]), text  # the trace is raw JSON


def test_a_re_uploaded_document_reads_its_chunk_counts(page, server, tmp_path: Path):
    doc = tmp_path / "handbook.md"
    doc.write_text("# Travel\n\nBook trains, not flights.\n\n# Expenses\n\nReceipts within 30 days.\n", encoding="utf-8")
    open_inspector(page, server)
    page.get_by_role("tab", name="Documents").click()
    status = page.locator("#upload-status")
    for again in (False, True):
        page.get_by_label("File", exact=True).set_input_files(str(doc))
        page.get_by_label("Title", exact=True).fill("Handbook")
        page.get_by_role("button", name="Upload", exact=True).click()
        expect(status).to_have_text(re.compile(r"^Handbook: ready, (\d+)/\1 chunks" + (r" \(already stored\)$" if again else "$")))
        page.locator("#chunk-list li").first.wait_for()
    assert not NO_LITERALS.search(page.locator("#panel-documents").inner_text())
    assert page.locator("#document-list li").count() == 1


def test_the_page_has_a_favicon(page, server):
    with httpx.Client(base_url=server) as c:
        for path in ("/favicon.ico", "/inspector/favicon.ico"):
            r = c.get(path)
            assert r.status_code == 200 and r.headers["content-type"] == "image/x-icon", path
            assert r.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    missing: list[str] = []
    page.on("response", lambda res: missing.append(res.url) if res.status == 404 else None)
    page.goto(f"{server}/inspector/")
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href and page.evaluate("(h) => fetch(h).then(r => r.status)", href) == 200
    assert not missing
