"""The inspector opens the right source (issue 71): a cited chunk opens its own document at
that chunk (two documents share a title; the chunk sits pages in), an inline ``[S1]`` marker
opens what it cites, one context opens by itself, ``#context=`` opens that context, a long
scope badge wraps inside its card at 1400 px, and the entity timeline's log scale gives a
change of yesterday room in years of history."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
from playwright.sync_api import expect

CTX = "acme"


def post_fact(c: httpx.Client, text: str, at: str | None = None, ctx: str = CTX, **extra) -> dict:
    r = c.post(f"/api/v1/{ctx}/facts", json={"text": text, **({"observedAt": at} if at else {}), **extra})
    assert r.status_code == 200, r.text
    return r.json()


def upload(c: httpx.Client, title: str, text: str) -> str:
    r = c.post(f"/api/v1/{CTX}/documents", files={"file": (f"{title}.md", text.encode(), "text/markdown")},
               data={"title": title})
    assert r.status_code in (200, 201, 202), r.text
    doc_id = r.json()["id"]
    for _ in range(400):
        doc = c.get(f"/api/v1/{CTX}/documents/{doc_id}").json()
        if doc["status"] not in ("ingesting", "uploading"):
            break
    assert doc["status"] == "ready", doc
    return doc_id


def chunks_of(c: httpx.Client, doc_id: str) -> list[dict]:
    out, cursor = [], None
    while True:
        page = c.get(f"/api/v1/{CTX}/documents/{doc_id}/chunks", params={"limit": 100, "cursor": cursor}).json()
        out += page["chunks"]
        info = page["page"] if isinstance(page.get("page"), dict) else page
        if not info.get("hasMore"):
            return out
        cursor = info["nextCursor"]


def filler(n: int, topic: str) -> str:
    return "\n\n".join(f"# {topic} section {i}\n\n" + " ".join(f"{topic} note {i}.{j} about routine matters." for j in range(40))
                       for i in range(n))


def test_a_cited_chunk_opens_its_own_document_at_that_chunk_and_its_marker_too(page, server):
    with httpx.Client(base_url=server, timeout=60) as c:
        upload(c, "Handbook", filler(6, "Cafeteria") + "\n\n# Lunch\n\nLunch is served at noon.\n")
        # The same title, uploaded second: the cited chunk is here, past the first page of chunks.
        second = upload(c, "Handbook", filler(30, "Office") + "\n\n# Parking\n\nThe zeppelin hangar on level minus "
                        "nine is where staff park their bicycles overnight.\n")
        chunks = chunks_of(c, second)
        target = next(ch for ch in chunks if "zeppelin" in ch["text"])
        assert chunks.index(target) >= 20, "the cited chunk should sit past the first page of 20"
    page.goto(f"{server}/inspector/#context={CTX}")
    page.get_by_role("tab", name="Chat").click()
    page.get_by_label("Message", exact=True).fill("Where do staff park bicycles in the zeppelin hangar?")
    page.get_by_role("button", name="Send").click()
    page.locator(".chat-turn .citations").wait_for()
    cited = page.locator(f'.citations li[data-kind="chunk"][data-id="{target["id"]}"]')
    expect(cited).to_have_count(1)
    # The citation's link opens the second document (not the first of that title) at the chunk.
    cited.locator("a.cited").click()
    expect(page.locator("#chunk-list")).to_have_attribute("data-document", second)
    chunk = page.locator(f'#chunk-list li[data-id="{target["id"]}"]')
    expect(chunk).to_have_class(re.compile(r"\bhighlight\b"))
    expect(chunk).to_be_focused()
    assert page.locator("#chunk-list li.highlight").count() == 1
    # Away, then the inline marker of that source: it opens the chunk too, not just the list.
    page.get_by_role("tab", name="Chat").click()
    marker = page.locator(f'.chat-turn .reply a.marker[data-id="{target["id"]}"]').first
    expect(marker).to_have_count(1)
    page.evaluate("() => document.getElementById('chunk-list').replaceChildren()")
    marker.click()
    expect(page.get_by_role("tab", name="Documents")).to_have_attribute("aria-selected", "true")
    expect(page.locator(f'#chunk-list li.highlight[data-id="{target["id"]}"]')).to_be_focused()
    expect(page.locator(f'.citations li.current[data-id="{target["id"]}"]')).to_have_count(1)


def test_a_marker_of_a_fact_opens_the_cited_value_on_its_entity_page(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        post_fact(c, "I live in Lisbon.", "2024-03-01T00:00:00Z")
        post_fact(c, "I moved to Porto.", "2025-06-01T00:00:00Z")
    page.goto(f"{server}/inspector/")  # one context: it opens by itself
    page.locator("#state-counts").get_by_text(re.compile(r"\d+ entities")).wait_for()
    page.get_by_role("tab", name="Chat").click()
    page.get_by_label("Message", exact=True).fill("Where do I live?")
    page.get_by_role("button", name="Send").click()
    page.locator(".chat-turn .citations").wait_for()
    marker = page.locator(".chat-turn .reply a.marker").first
    cited_id = marker.get_attribute("data-id")
    assert page.locator(f'.citations li[data-id="{cited_id}"]').get_attribute("data-kind") == "attribute"
    marker.click()
    bar = page.locator(f'#timeline g.bar[data-attr="{cited_id}"]')
    expect(bar).to_be_focused()
    assert bar.get_attribute("data-value") == "Porto"


def test_the_only_context_opens_by_itself(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        post_fact(c, "I work at Initech.")
    page.goto(f"{server}/inspector/")
    page.locator("#state-body section.category").first.wait_for()
    assert page.locator("#context").input_value() == CTX
    expect(page.locator("#state-counts")).to_contain_text(re.compile(r"\d+ entities"))
    expect(page.locator("#status")).to_have_text(f"Context {CTX}, partition default.")


def test_a_context_in_the_url_opens_that_context(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        post_fact(c, "I work at Initech.")
        post_fact(c, "I live in Oslo.", ctx="beta")
        post_fact(c, "I like tea.", ctx="beta")
    page.goto(f"{server}/inspector/")  # two contexts: none is chosen for the reader
    expect(page.locator("#context-options option")).to_have_count(2)
    expect(page.locator("#state-body")).to_contain_text("Choose a context and press Open.")
    page.goto(f"{server}/inspector/#context=beta")
    page.reload()
    page.locator("#state-body section.category").first.wait_for()
    assert page.locator("#context").input_value() == "beta"
    expect(page.locator("#state-body")).to_contain_text("Oslo")
    expect(page.locator("#state-body")).not_to_contain_text("Initech")
    page.evaluate("() => { location.hash = 'context=acme'; }")  # a new hash opens the new context
    expect(page.locator("#state-body")).to_contain_text("Initech")
    assert page.locator("#context").input_value() == CTX


def test_a_long_scope_badge_wraps_inside_its_card_at_1400_px(page, server):
    long_scope = "org/acme-international-holdings/division/research-and-development/team/long-running-projects/user/alice"
    with httpx.Client(base_url=server, timeout=30) as c:
        post_fact(c, "I moved to Madrid.")
        session = c.post(f"/api/v1/{CTX}/sessions", json={"scopes": [long_scope]}).json()["id"]
        r = c.post(f"/api/v1/{CTX}/chat", json={"message": "I moved to Berlin.", "sessionId": session})
        assert r.status_code == 200, r.text
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{server}/inspector/#context={CTX}")
    badge = page.locator("#state-body .scope", has_text=long_scope)
    expect(badge).to_have_count(1)
    fits = badge.evaluate("""b => { const card = b.closest('.entity-card'); const r = b.getBoundingClientRect();
      const c = card.getBoundingClientRect();
      return {inside: r.left >= c.left - 0.5 && r.right <= c.right + 0.5, lines: Math.round(r.height / 12),
              overflow: card.scrollWidth - card.clientWidth, text: b.textContent}; }""")
    assert fits["inside"] and fits["overflow"] <= 0, fits
    assert fits["lines"] >= 2 and fits["text"] == f"scope: {long_scope}", fits  # wrapped, whole


def test_the_timeline_scale_gives_a_recent_change_room(page, server):
    now = datetime.now(UTC)
    yesterday = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with httpx.Client(base_url=server, timeout=30) as c:
        post_fact(c, "I live in Lisbon.", "2023-01-01T00:00:00Z")
        post_fact(c, "I moved to Porto.", (now - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        post_fact(c, "I moved to Faro.", yesterday)
    page.goto(f"{server}/inspector/#context={CTX}")
    page.locator('#state-body a[data-entity="entity:person/user"]').click()
    timeline = page.locator("#timeline")
    expect(timeline).to_have_attribute("data-scale", "log")
    widths = page.locator('#timeline g.bar[data-key="location"]').evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.value, e.querySelector('rect').getBBox().width]))")
    plot = timeline.evaluate("svg => { const ts = [...svg.querySelectorAll('.axis')].map(t => +t.getAttribute('x'));"
                             " return Math.max(...ts) - Math.min(...ts); }")
    # Linear, a day of ~3 years is 0.1% of the plot (under 1 px) and 30 days under 3%.
    assert widths["Faro"] >= 0.15 * plot, (widths, plot)
    assert widths["Porto"] >= 0.15 * plot, (widths, plot)
    assert widths["Lisbon"] >= 0.15 * plot, (widths, plot)  # the long past still reads
    ticks = page.locator("#timeline .axis").all_text_contents()
    assert "now" in ticks and "1 d ago" in ticks and "30 d ago" in ticks, ticks
    # The as-of cursor follows the same scale: a day back sits at the "1 d ago" tick.
    slider = page.get_by_label("As of", exact=True)
    slider.evaluate("(el, t) => { el.value = el.positionOf(t); el.dispatchEvent(new Event('input', {bubbles: true})); }",
                    (now - timedelta(days=1)).timestamp() * 1000)
    cursor_x = float(page.locator("#asof-line").get_attribute("x1"))
    tick_x = float(page.locator("#timeline .axis", has_text="1 d ago").get_attribute("x"))
    assert abs(cursor_x - tick_x) < 6, (cursor_x, tick_x)
    # The slider runs on that scale too: 38% of its length back is about two days, not two
    # fifths of three years (a linear slider put all of the last month in its last 3%).
    slider.evaluate("el => { el.value = 620; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    at = page.locator("#asof-value").text_content()
    picked = datetime.strptime(at, "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
    assert timedelta(days=1) < now - picked < timedelta(days=3), at
    attrs = page.locator("#asof-attributes")
    expect(attrs).to_have_attribute("data-asof", picked.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    assert "Porto" in attrs.inner_text() and "Faro" not in attrs.inner_text()
    slider.focus()
    slider.press("End")
    expect(attrs).to_have_attribute("data-asof", "now")
    assert "Faro" in attrs.inner_text()
    slider.press("ArrowLeft")  # the keyboard still steps it
    expect(page.locator("#asof-value")).not_to_have_text("now")


def test_a_cited_turn_opens_its_own_session_at_that_turn(page, server):
    with httpx.Client(base_url=server, timeout=30) as c:
        session = c.post(f"/api/v1/{CTX}/sessions", json={}).json()["id"]
        for i in range(24):
            post_fact(c, f"Routine stand-up note number {i}: nothing unusual.", sessionId=session, infer="none")
        said = post_fact(c, "The zeppelin hangar door code is marmalade.", sessionId=session, infer="none")
    page.goto(f"{server}/inspector/#context={CTX}")
    page.get_by_role("tab", name="Chat").click()  # a session of its own, not the cited one
    page.get_by_label("Message", exact=True).fill("What is the zeppelin hangar door code?")
    page.get_by_role("button", name="Send").click()
    cited = page.locator(f'.citations li[data-kind="turn"][data-id="{said["turnId"]}"]')
    expect(cited).to_have_count(1)
    cited.locator("a.cited").click()
    expect(page.locator("#turn-list")).to_have_attribute("data-session", session)
    turn = page.locator(f'#turn-list li[data-id="{said["turnId"]}"]')
    expect(turn).to_be_focused()  # paged to: it is the 25th turn, past the first page of 20
    expect(turn).to_have_class(re.compile(r"\bhighlight\b"))


def test_a_chunk_citation_without_its_document_never_opens_another_document(page, server):
    """A citation with no documentId (a reply cached before citations carried it) is searched
    for: no document is guessed by title or taken first."""
    with httpx.Client(base_url=server, timeout=60) as c:
        upload(c, "Handbook", "# Lunch\n\nLunch is served at noon in the zeppelin hangar canteen.\n")

    def strip_document_ids(route):
        response = route.fetch()
        body = re.sub(r'"documentId":\s*"[^"]*"', '"documentId": null', response.text())
        route.fulfill(response=response, body=body)

    page.route("**/chat", strip_document_ids)
    page.goto(f"{server}/inspector/#context={CTX}")
    page.get_by_role("tab", name="Chat").click()
    page.get_by_label("Message", exact=True).fill("When is lunch served in the zeppelin hangar canteen?")
    page.get_by_role("button", name="Send").click()
    cited = page.locator('.citations li[data-kind="chunk"]').first
    cited.wait_for()
    cited.locator("a.cited").click()
    expect(page.get_by_role("tab", name="Search")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#search-hits")).to_be_visible()
    assert page.locator("#chunk-list li").count() == 0  # no document was opened
