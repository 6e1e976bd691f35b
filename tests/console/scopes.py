"""The Console under a narrow token, in a real browser (Playwright driving the Debian chromium).

    scopes.py <base url> <token with only templates:read> <token with only streaming:read>

The server has a configured key, so no development token is offered: the person types the
token into the "Access token" field. A refused token says so and stays on the sign-in screen.
With `templates:read` only, the screens and actions the token does not allow are not offered:
no upload, no edit or delete, no report request; a screen reached by its address says which
scope it needs. With `streaming:read` only, the Events screen shows the manifest but not the
parked events nor their redrive (those need `streaming:admin`). No error in the browser's
console but the refused token's 401.
"""

import os
import sys

from playwright.sync_api import expect, sync_playwright

expect.set_options(timeout=60_000)
BASE, TOKEN, STREAMING_READER = sys.argv[1:4]
CHROMIUM = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"


def main():
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(locale="en-US")
        page.set_default_timeout(60_000)
        page.on("console", lambda m: m.type == "error" and errors.append((m.text, (m.location or {}).get("url", ""))))
        page.on("pageerror", lambda e: errors.append((f"page error: {e}", "")))

        with page.expect_response(lambda r: r.url.endswith("/console/dev-token")) as offered:
            page.goto(f"{BASE}/console/")
        assert offered.value.status == 204, "no development token with a configured key"
        page.wait_for_selector("main[data-screen='signin']")
        assert page.locator("#use-dev-token").count() == 0

        page.get_by_label("Access token").fill("not-a-token")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("main p.error")).to_contain_text("That token was refused.")
        assert page.evaluate("sessionStorage.getItem('reporter.console.token')") is None

        page.get_by_label("Access token").fill(TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_selector("main[data-screen='overview']")
        links = page.locator("#nav a").all_inner_texts()
        assert links == ["Overview", "Templates", "Builder"], links

        page.goto(f"{BASE}/console/#/templates")
        page.wait_for_selector("main[data-screen='templates']")
        assert page.locator("#upload-submit").count() == 0, "no upload without templates:write"
        assert page.get_by_role("button", name="Delete").count() == 0
        assert page.get_by_role("button", name="Edit").count() == 0

        page.goto(f"{BASE}/console/#/reports")
        expect(page.locator("main")).to_contain_text("Your token does not allow this (reports:read).")

        page.goto(f"{BASE}/console/#/builder")
        page.wait_for_selector("main[data-screen='builder']")
        expect(page.locator("#builder-add")).to_be_disabled()
        expect(page.locator("#builder-save")).to_be_disabled()

        # streaming:read only: the manifest, no parked events, no redrive.
        page.click("#signout")
        page.wait_for_selector("main[data-screen='signin']")
        page.get_by_label("Access token").fill(STREAMING_READER)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_selector("main[data-screen='overview']")
        page.goto(f"{BASE}/console/#/events")
        page.wait_for_selector("main[data-screen='events']")
        expect(page.locator("main h2", has_text="Event types")).to_be_visible()
        assert page.locator("#parked").count() == 0, "parked events need streaming:admin"
        assert page.locator("#redrive").count() == 0, "the redrive needs streaming:admin"
        browser.close()

    unexpected = [t for t, url in errors if not ("401" in t and "/v1/templates" in url)]
    assert not unexpected, "errors in the browser console:\n" + "\n".join(unexpected)
    print("scopes: ok")


if __name__ == "__main__":
    main()
