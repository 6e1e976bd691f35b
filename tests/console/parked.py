"""Parked events on the Events screen, in a real browser (Playwright driving the Debian chromium).

    parked.py <base url> <ce-id of the parked event> <axe.min.js> [<screenshots dir>]

The server (tests/processes/console.rs) parked one `deadline.created` event: the broker
returned it (no binding, no alternate exchange) and `STREAMING_OUTBOX_MAX_ATTEMPTS=1`. Signed
in with the development token (every scope, streaming:admin included), the Events screen lists
it with its ce-id, key, attempts and the broker's reason; axe-core finds no serious or critical
violation on the screen with the list shown; the redrive returns it to pending and the list
empties. No error may reach the browser's console but the 404 of the in-memory deliveries,
which a RabbitMQ deployment does not record.
"""

import os
import pathlib
import sys

from playwright.sync_api import expect, sync_playwright

expect.set_options(timeout=60_000)
BASE, CE_ID, AXE = sys.argv[1:4]
SHOTS = pathlib.Path(sys.argv[4]) if len(sys.argv) > 4 else None
CHROMIUM = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"


def main():
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        # bypass_csp only so that the test can inject axe-core; the page's own policy is
        # checked by tests/api/console.rs.
        ctx = browser.new_context(bypass_csp=True, viewport={"width": 1440, "height": 900}, locale="en-US")
        ctx.set_default_timeout(60_000)
        page = ctx.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append((m.text, (m.location or {}).get("url", ""))))
        page.on("pageerror", lambda e: errors.append((f"page error: {e}", "")))

        page.goto(f"{BASE}/console/")
        page.click("#use-dev-token")
        page.wait_for_selector("main[data-screen='overview'] .counter")
        page.goto(f"{BASE}/console/#/events")
        page.wait_for_selector("main[data-screen='events']")

        card = page.locator("#parked")
        expect(card.locator("h2")).to_have_text("Parked events (1)")
        row = card.locator(f"tr[data-ce-id='{CE_ID}']")
        expect(row).to_be_visible()
        expect(row).to_contain_text("deadline.created")
        expect(row).to_contain_text(CE_ID)
        expect(row.locator("td.reason")).to_contain_text("NO_ROUTE")
        attempts = int(row.locator("td").nth(4).inner_text())
        assert attempts >= 1, attempts
        # This deployment publishes to RabbitMQ: no in-memory deliveries to list.
        expect(page.locator("#deliveries")).to_contain_text("does not publish to the in-memory broker")

        page.add_script_tag(content=pathlib.Path(AXE).read_text())
        found = page.evaluate("async () => (await axe.run(document)).violations")
        bad = [f"{v['id']} ({v['impact']}): {v['help']}" for v in found if v["impact"] in ("serious", "critical")]
        assert not bad, "axe-core on the Events screen with a parked event:\n" + "\n".join(bad)

        if SHOTS:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "events-parked.png"), clip={"x": 0, "y": 0, "width": 1440, "height": 420})
        page.click("#redrive")
        expect(page.locator(".toast", has_text="1 parked event(s) returned to pending.")).to_be_visible()
        expect(card.locator("h2")).to_have_text("Parked events (0)")
        expect(card).to_contain_text("No parked events.")
        expect(page.locator("#redrive")).to_be_disabled()

        # Portuguese.
        page.select_option("#lang", "pt")
        expect(page.locator("#parked h2")).to_have_text("Eventos estacionados (0)")
        page.select_option("#lang", "en")
        browser.close()

    # The one failed call the screen expects: the in-memory deliveries, 404 with RabbitMQ.
    unexpected = [t for t, url in errors if "/v1/streaming/deliveries" not in url]
    assert not unexpected, "errors in the browser console:\n" + "\n".join(unexpected)
    print("parked: ok")


if __name__ == "__main__":
    main()
