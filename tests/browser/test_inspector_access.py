"""The inspector's Access panel in a real browser against the local server: who the key is
and what it may do here, a key minted (its secret shown once), rotated and deleted, and the
principals with their grants."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

CTX = "acme"


def open_access(page, server: str, key: str = "") -> None:
    page.goto(f"{server}/inspector/")
    if key:
        page.get_by_label("API key", exact=True).fill(key)
        page.get_by_label("API key", exact=True).dispatch_event("change")
    page.get_by_label("Context", exact=True).fill(CTX)
    page.get_by_role("button", name="Open").click()
    page.get_by_role("tab", name="Access").click()


@pytest.mark.parametrize("require_keys_setting", [True])
def test_who_am_i_keys_and_principals(page, server, runtime):
    """On a service started with keys required: the operator's admin key, then a key minted,
    rotated and deleted in the page."""
    ops, _ = runtime.administration.operator_create_key("ops", admin=True, name="ops")
    with httpx.Client(base_url=server, timeout=30, headers={"Authorization": f"Bearer {ops}"}) as c:
        r = c.post(f"/api/v1/{CTX}/principals/reader/grants", json={"path": "org/acme", "verbs": ["memory:read"]})
        assert r.status_code == 200, r.text
    open_access(page, server, ops)
    expect(page.locator("#whoami-effective")).to_contain_text("admin /")
    expect(page.locator("#principal-list [data-principal=reader]")).to_contain_text("memory:read org/acme")
    page.get_by_label("Name", exact=True).fill("ci")
    page.get_by_role("button", name="Mint key").click()
    minted = page.locator("#minted-key")
    minted.wait_for()
    secret = minted.inner_text()
    assert secret.startswith("amk_")
    # the page goes on with the new key
    open_access(page, server, secret)
    expect(page.locator("#whoami-effective")).to_contain_text("admin /")  # minted with the minter's authority
    expect(page.locator("#key-list [data-key=ci]")).to_be_visible()
    page.locator("#key-list [data-key=ci]").get_by_role("button", name="Rotate").click()
    rotated = page.locator("#minted-key")
    expect(rotated).not_to_have_text(secret)
    new_secret = rotated.inner_text()
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.get(f"/api/v1/{CTX}/me", headers={"Authorization": f"Bearer {secret}"}).status_code == 401
        assert c.get(f"/api/v1/{CTX}/me", headers={"Authorization": f"Bearer {new_secret}"}).status_code == 200
    open_access(page, server, new_secret)
    page.locator("#key-list [data-key=ci]").get_by_role("button", name="Delete").click()
    expect(page.locator("#key-secret")).to_have_text("Deleted.")
