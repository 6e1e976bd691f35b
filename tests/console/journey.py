"""The Console in a real browser (Playwright driving the Debian chromium).

    journey.py <base url> <examples dir> <screenshots dir> <axe.min.js>

A tester's journey in memory mode: sign in with the offered development token, upload the
example template by drag and drop, edit it and watch the preview change, make a report, see
it finish without reloading, download it, create a deadline, deliver it, see its events; one
journey through the visual builder (add, nest, reorder blocks with the buttons and by drag and
drop, a filter, see the code and a validation error on its block, save as a template), then,
in a new browser context (no storage of the first), the template reopened as blocks from its
source, a malformed blocks comment shown as code, a source edited outside the builder flagged;
and a template delete that counts its cascade over more than one page of deadlines. No error
may reach the browser's console. Then every screen: a screenshot, its time to first paint on a fresh load, and an
axe-core check (no serious or critical violation). Prints one JSON line of figures last.
Exits non-zero with the reason on the first failure.
"""

import gzip
import json
import os
import pathlib
import sys
import time

from playwright.sync_api import expect, sync_playwright

expect.set_options(timeout=60_000)

BASE, EXAMPLES, SHOTS, AXE = sys.argv[1:5]
SHOTS = pathlib.Path(SHOTS)
SHOTS.mkdir(parents=True, exist_ok=True)
CHROMIUM = os.environ.get("CHROMIUM_PATH") or "/usr/bin/chromium"
SCREENS = ["overview", "templates", "editor", "builder", "reports", "deadlines", "datasources", "events"]
TIMEOUT = 60_000  # generous: a loaded 2-core machine

console_errors = []  # (text, url of the resource it is about)
notes = []


def watch(page):
    def on_console(msg):
        if msg.type == "error":
            console_errors.append((f"console.error: {msg.text}", (msg.location or {}).get("url", "")))

    page.on("console", on_console)
    page.on("pageerror", lambda e: console_errors.append((f"page error: {e}", "")))


def screen(page, name, query=""):
    page.goto(f"{BASE}/console/#/{name}{query}")
    page.wait_for_selector(f"main[data-screen='{name}']", timeout=TIMEOUT)


def drag(page, source, target, y_fraction):
    """Drags `source` (a drag handle) onto `target` at `y_fraction` of its height, with the
    mouse (HTML5 drag and drop), both in the viewport (the target's top scrolled to the top)."""
    target.evaluate("el => el.scrollIntoView({ block: 'start' })")
    s, t = source.bounding_box(), target.bounding_box()
    height = page.viewport_size["height"]
    assert 0 <= s["y"] and s["y"] + s["height"] <= height, f"drag source in view: {s}"
    assert 0 <= t["y"] + t["height"] * y_fraction <= height, f"drop point in view: {t}"
    page.mouse.move(s["x"] + s["width"] / 2, s["y"] + s["height"] / 2)
    page.mouse.down()
    page.mouse.move(t["x"] + 60, t["y"] + t["height"] * y_fraction, steps=8)
    page.mouse.up()


def drag_until(page, source, target, y_fraction, settled):
    """`drag`, and again (three gestures at most) while `settled(timeout_ms)`, an expectation,
    does not hold: on a loaded machine the browser may not start a drag from a quick gesture
    (a CI run saw the blocks unchanged for 60 s), and a gesture that started nothing changed
    nothing, so a second one is the same request."""
    for attempt in range(3):
        drag(page, source, target, y_fraction)
        try:
            settled(TIMEOUT if attempt == 2 else 5_000)
            return
        except AssertionError:
            if attempt == 2:
                raise
            print(f"drag gesture {attempt + 1} changed nothing; again", file=sys.stderr)


def main():
    source = pathlib.Path(EXAMPLES, "templates", "statement.html.tpl").read_text()
    figures = {"firstContentfulPaintMs": {}, "screenReadyMs": {}}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1440, "height": 900}, locale="en-US")
        ctx.set_default_timeout(TIMEOUT)
        page = ctx.new_page()
        watch(page)
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))

        # Sign in: the "Access token" field, and the development token offered to this machine.
        page.goto(f"{BASE}/console/")
        expect(page.get_by_label("Access token")).to_be_visible()
        page.screenshot(path=str(SHOTS / "signin.png"))
        page.click("#use-dev-token")
        page.wait_for_selector("main[data-screen='overview'] .counter")
        token = page.evaluate("sessionStorage.getItem('reporter.console.token')")
        assert token and token.count(".") == 2, "the token is kept in session storage"
        assert token not in page.url, "never in the URL"
        assert not ctx.cookies(), "never in a cookie"

        # Upload the example template by drag and drop.
        screen(page, "templates")
        dt = page.evaluate_handle(
            """(text) => { const dt = new DataTransfer();
                 dt.items.add(new File([text], 'statement.html.tpl', { type: 'text/plain' })); return dt; }""",
            source,
        )
        page.dispatch_event(".dropzone", "drop", {"dataTransfer": dt})
        page.get_by_label("Description").first.fill("Account statement")
        page.click("#upload-submit")
        row = page.locator("tr", has_text="Account statement").first
        expect(row).to_be_visible()

        # Its source (read back from the API, not from what this tab uploaded), highlighted.
        page.evaluate(
            "Object.keys(sessionStorage).filter(k => k.startsWith('reporter.console.source.'))"
            ".forEach(k => sessionStorage.removeItem(k))"
        )
        row.get_by_role("button", name="Account statement").click()
        src_view = page.locator(".template-details pre.source").first
        expect(src_view).to_contain_text("{% for a in bank.accounts %}")
        expect(src_view.locator(".tk-tag").first).to_be_visible()
        expect(page.locator(".template-details .fields").first).to_contain_text("bank.accounts")
        page.screenshot(path=str(SHOTS / "templates.png"), full_page=True)

        # Edit it and watch the preview change.
        row.get_by_role("button", name="Edit").click()
        page.wait_for_selector("main[data-screen='editor']")
        expect(page.locator("#source")).to_have_value(source)
        page.wait_for_selector("main[data-preview-status]")
        status = page.evaluate("document.querySelector('main').dataset.previewStatus")
        edited = source.replace("<h1>Account statements</h1>", "<h1>Statements seen in the console</h1>")
        if status == "unavailable":
            print("SKIPPED: the preview part of the journey: POST /v1/templates/preview answers 404/405 on this build")
            notes.append("preview endpoint absent")
            page.fill("#source", edited)
        else:
            frame = page.frame_locator("#preview iframe")
            expect(frame.locator("h1")).to_have_text("Account statements")
            # The frame is sandboxed without scripts.
            assert page.locator("#preview iframe").get_attribute("sandbox") == ""
            page.fill("#source", edited)
            expect(frame.locator("h1")).to_have_text("Statements seen in the console")
            # A syntax error is pointed at its line (the one 4xx this journey causes on purpose).
            notes.append("syntax error shown")
            broken = edited.rstrip("\n") + "\n{{ unclosed\n"
            line = broken.rstrip("\n").count("\n") + 1
            page.fill("#source", broken)
            expect(page.locator("#preview-errors")).to_contain_text(f"Line {line}")
            page.fill("#source", edited)
            expect(page.locator("#preview-errors")).to_be_empty()
            expect(frame.locator("h1")).to_have_text("Statements seen in the console")
        page.click("#editor-save")
        expect(page.locator(".toast", has_text="Template saved")).to_be_visible()
        page.screenshot(path=str(SHOTS / "editor.png"), full_page=True)
        template_id = page.url.split("id=")[-1]

        if status != "unavailable":
            # A new template: CSV previews as a table, TXT as text.
            screen(page, "editor")
            page.select_option("main select >> nth=0", "csv")
            page.fill("#source", pathlib.Path(EXAMPLES, "templates", "transactions.csv.tpl").read_text())
            expect(page.locator("#preview table.csv tbody tr").first).to_be_visible()
            page.select_option("main select >> nth=0", "txt")
            page.fill("#source", pathlib.Path(EXAMPLES, "templates", "summary.txt.tpl").read_text())
            expect(page.locator("#preview pre.output")).not_to_be_empty()

        # Make a report, see it finish without reloading, look at its sections, download it.
        screen(page, "reports", f"?templateId={template_id}")
        page.get_by_role("button", name="Add filter").click()
        page.get_by_label("Table", exact=True).select_option("transactions")
        page.get_by_label("Field", exact=True).select_option("booked_on")
        page.get_by_label("Operator").select_option("between")
        page.get_by_label("Values (comma-separated)").fill("2024-01-01, 2024-12-31")
        page.click("#report-submit")
        finished = page.locator("#report-list tr[data-status='Finished']").first
        expect(finished).to_be_visible(timeout=TIMEOUT)
        finished.get_by_role("button").first.click()
        expect(page.locator("#report-list .details").first).to_contain_text("bank")
        with page.expect_download() as dl:
            finished.locator("button.download").click()
        body = pathlib.Path(dl.value.path()).read_text()
        assert "Statements seen in the console" in body, body[:300]
        page.screenshot(path=str(SHOTS / "reports.png"), full_page=True)

        # Create a deadline, deliver it.
        screen(page, "deadlines")
        deadline = f"Liquidity report {time.time_ns() % 100000}"
        page.get_by_label("Name", exact=True).fill(deadline)
        due = time.strftime("%Y-%m-28T18:00", time.gmtime())
        page.get_by_label("Due", exact=True).fill(due)
        page.get_by_label("Frequency").select_option("monthly")
        page.click("#deadline-save")
        drow = page.locator(f"tr[data-deadline='{deadline}']")
        expect(drow).to_be_visible()
        expect(page.locator(".calendar .chip", has_text=deadline)).to_be_visible()
        drow.locator("button.deliver").click()
        expect(drow.locator(".badge")).to_have_text("delivered")
        drow.get_by_role("button", name="Revert delivery").click()
        expect(drow.locator(".badge")).not_to_have_text("delivered")
        drow.locator("button.deliver").click()
        expect(drow.locator(".badge")).to_have_text("delivered")
        page.screenshot(path=str(SHOTS / "deadlines.png"), full_page=True)

        # The data source, its tables and its readiness check.
        screen(page, "datasources")
        card = page.locator("section[aria-label='bank']")
        expect(card.locator(".badge")).to_have_text("up")
        expect(card).to_contain_text("transactions")

        # See its events (memory:// publication).
        screen(page, "events")
        wire = page.locator("#deliveries li")
        expect(wire.first).to_be_visible()
        types = page.eval_on_selector_all("#deliveries li", "els => els.map(e => e.dataset.type)")
        for expected in ("template", "report", "deadline"):
            assert any(expected in t for t in types), f"no {expected} event on the wire: {types}"
        page.screenshot(path=str(SHOTS / "events.png"), full_page=True)

        # The visual builder: add, nest, reorder; code; an error on its block; save.
        screen(page, "builder")
        page.select_option("#builder-type", "text")
        page.click("#builder-add")
        page.select_option("#builder-type", "loop")
        page.click("#builder-add")
        loop = page.locator("fieldset.block[data-type='loop']")
        loop.get_by_role("button", name="Add inside").first.click()
        page.select_option("#builder-type", "variable")
        page.click("#builder-add")
        inner = loop.locator("fieldset.block[data-type='variable']")
        expect(inner).to_be_visible()
        # An empty variable is reported on its own block.
        expect(inner.locator(".block-error").first).to_be_visible()
        loop.get_by_label("iterator *").fill("a")
        loop.get_by_label("collection *").fill("bank.accounts")
        inner.get_by_label("variable *").fill("a.account_id")
        # A filter, from its small form.
        inner.get_by_role("button", name="Add filter").click()
        inner.get_by_label("Filter 1", exact=True).select_option("slice_str")
        inner.get_by_label("Filter 1 argument").fill("0:8")
        page.locator("fieldset.block[data-type='text']").get_by_label("content").fill("<h1>Accounts</h1>")
        top = page.locator("#builder-blocks [data-list='root'] > fieldset.block")
        # Reorder with the buttons (the keyboard's way): the loop first, then back.
        loop.get_by_role("button", name="Move up").first.click()
        expect(top.first).to_have_attribute("data-type", "loop")
        page.locator("#builder-blocks [data-list='root'] > fieldset.block[data-type='loop']").get_by_role("button", name="Move down").first.click()
        expect(top.first).to_have_attribute("data-type", "text")
        # Drag and drop (the mouse's way): the loop's handle onto the text block's legend (its
        # upper half) puts the loop before it; a new text block dropped on the lower half of
        # the variable goes inside the loop, after it; the text handle onto the loop's legend
        # puts the order back.
        root_text = page.locator("#builder-blocks [data-list='root'] > fieldset.block[data-type='text']").first
        drag_until(page, loop.locator(":scope > legend .handle"), root_text, 0.1,
                   lambda t: expect(top.first).to_have_attribute("data-type", "loop", timeout=t))
        loop.get_by_role("button", name="Add inside").first.click()  # back to the top level
        page.select_option("#builder-type", "text")
        page.click("#builder-add")
        expect(top).to_have_count(3)
        new_text = top.nth(2)
        drag_until(page, new_text.locator(":scope > legend .handle"), inner, 0.9,
                   lambda t: expect(top).to_have_count(2, timeout=t))
        nested = loop.locator("[data-list] > fieldset.block[data-type='text']")
        expect(nested).to_have_count(1)
        nested.get_by_label("content").fill(";")
        drag_until(page, root_text.locator(":scope > legend .handle"), loop.locator(":scope > legend"), 0.5,
                   lambda t: expect(top.first).to_have_attribute("data-type", "text", timeout=t))
        expect(top.nth(1)).to_have_attribute("data-type", "loop")
        expect(page.locator("#builder-verdict")).to_have_text("The blocks are valid.")
        expect(page.locator("#builder-code")).to_contain_text("for a in bank.accounts")
        expect(page.locator("#builder-code")).to_contain_text('slice_str:"0:8"')
        expect(page.locator("#builder-code")).to_contain_text(";\n{% endfor %}")
        page.locator("main").get_by_label("Description").fill("Builder made")
        page.click("#builder-save")
        page.wait_for_selector("main[data-saved-template]")
        built_id = page.evaluate("document.querySelector('main').dataset.savedTemplate")
        page.screenshot(path=str(SHOTS / "builder.png"), full_page=True)
        generated = page.locator("#builder-code").text_content()
        assert page.evaluate("localStorage.length") == 0, "nothing kept in this browser"

        # Any browser: a new context (no storage of the first) reopens it from its source.
        ctx2 = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US")
        ctx2.set_default_timeout(TIMEOUT)
        page2 = ctx2.new_page()
        watch(page2)
        page2.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))
        page2.goto(f"{BASE}/console/")
        page2.click("#use-dev-token")
        page2.wait_for_selector("main[data-screen='overview'] .counter")
        token2 = page2.evaluate("sessionStorage.getItem('reporter.console.token')")
        auth = {"Authorization": f"Bearer {token2}"}
        source = page2.request.get(f"{BASE}/v1/templates/{built_id}/source", headers=auth).text()
        marker_at = source.rindex("{# reporter-console:builder v1 ")
        saved_code = source[:marker_at].rstrip("\n")
        assert saved_code == generated.rstrip("\n"), (
            "the generated code, byte for byte, first: saved "
            f"{saved_code!r}, shown after the save {generated!r}")
        assert source.endswith(" #}") and "\n" not in source[marker_at:], source[-200:]
        screen(page2, "templates")
        page2.fill("form.filters input[type=search]", "Builder made")
        page2.locator("form.filters button[type=submit]").click()
        row2 = page2.locator("tr", has_text="Builder made").first
        row2.get_by_role("button", name="Builder made").click()
        details2 = page2.locator(".template-details").first
        expect(details2.locator("pre.source")).to_contain_text("for a in bank.accounts")
        expect(details2.locator("pre.source")).not_to_contain_text("reporter-console:builder")
        details2.get_by_role("button", name="Open in builder").click()
        page2.wait_for_selector("main[data-screen='builder'][data-reopened] fieldset.block[data-type='variable']")
        expect(page2.locator("#builder-notice")).to_contain_text("Opened “Builder made”")
        assert page2.locator("#builder-stale").count() == 0, "its code is its blocks' code"
        expect(page2.locator("#builder-code")).to_contain_text("for a in bank.accounts")
        expect(page2.locator("fieldset.block[data-type='variable']").get_by_label("Filter 1 argument")).to_have_value("0:8")
        expect(page2.locator("#builder-blocks [data-list='root'] > fieldset.block")).to_have_count(2)
        expect(page2.locator("main").get_by_label("Description")).to_have_value("Builder made")
        assert page2.evaluate("localStorage.length") == 0
        # A conditional with an elif branch, from the small forms.
        page2.select_option("#builder-type", "conditional")
        page2.click("#builder-add")
        cond = page2.locator("fieldset.block[data-type='conditional']")
        cond_id = cond.get_attribute("data-block")
        cond.get_by_label("condition *", exact=True).fill("bank.accounts")
        cond.get_by_role("button", name="Add inside").first.click()
        page2.select_option("#builder-type", "text")
        page2.click("#builder-add")
        cond.locator(f"[data-list='{cond_id}'] > fieldset.block[data-type='text']").get_by_label("content").fill("some")
        cond.get_by_role("button", name="Add elif branch").click()
        cond.get_by_label("Elif 1 condition").fill("bank.balances")
        branch = cond.locator(f"fieldset.branch[data-branch='{cond_id}-elif-0']")
        branch.get_by_role("button", name="Add inside").click()
        page2.click("#builder-add")
        branch.locator("fieldset.block[data-type='text']").get_by_label("content").fill("other")
        expect(page2.locator("#builder-verdict")).to_have_text("The blocks are valid.")
        expect(page2.locator("#builder-code")).to_contain_text("elif bank.balances")
        # Saved again from the reopened blocks: the same template (PATCH), its comment updated.
        page2.click("#builder-save")
        expect(page2.locator(".toast", has_text="Template saved from the builder.")).to_be_visible()
        assert page2.evaluate("document.querySelector('main').dataset.savedTemplate") == built_id
        resaved = page2.request.get(f"{BASE}/v1/templates/{built_id}/source", headers=auth).text()
        assert "elif bank.balances" in resaved and resaved.rindex("{# reporter-console:builder v1 ") > resaved.index("elif bank.balances"), resaved[-300:]

        def upload(text, fmt, description):
            r = page2.request.post(f"{BASE}/v1/templates", headers=auth, multipart={
                "template": {"name": "t.tpl", "mimeType": "text/plain", "buffer": text.encode()},
                "outputFormat": fmt, "description": description})
            assert r.status == 201, r.text()
            return r.json()["id"]

        # Edited outside the builder (the code changed, the comment kept): flagged on opening.
        edited_id = upload("<!-- edited -->" + source[:marker_at] + source[marker_at:], "html", "Edited by hand")
        screen(page2, "builder", f"?id={edited_id}")
        page2.wait_for_selector("main[data-reopened]")
        expect(page2.locator("#builder-stale")).to_be_visible()
        # A malformed comment: a clear message, and the code shown instead.
        broken = "Totals\n{{ 1 }}\n{# reporter-console:builder v1 e30!bad #}"
        broken_id = upload(broken, "txt", "Broken blocks")
        screen(page2, "builder", f"?id={broken_id}")
        expect(page2.locator("#builder-reopen-error")).to_contain_text("could not be read")
        expect(page2.locator("#builder-reopen-code")).to_contain_text("Totals")
        assert page2.locator("main[data-reopened]").count() == 0

        # Delete with its cascade counted over every page of deadlines (more than 100 of them).
        cascade_id = upload("Cascade\n{{ 1 }}\n", "txt", "Cascade of many")
        many = 103
        for i in range(many):
            due = time.strftime("%Y-%m-%dT12:00:00Z", time.gmtime(time.time() + 86400 * (i + 2)))
            r = page2.request.post(f"{BASE}/v1/deadlines", headers=auth, data={
                "name": f"Cascade {i}", "type": "custom", "dueDate": due, "frequency": "once",
                "color": "#1E88E5", "templateId": cascade_id})
            assert r.status == 201, r.text()
        total = page2.request.get(f"{BASE}/v1/deadlines?limit=1", headers=auth).json()["total"]
        assert total > 100 + 1, total
        screen(page2, "templates")
        page2.fill("form.filters input[type=search]", "Cascade of many")
        page2.locator("form.filters button[type=submit]").click()
        page2.locator("tr", has_text="Cascade of many").get_by_role("button", name="Delete").click()
        expect(page2.locator(".toast", has_text=f"Template deleted ({many} deadline(s) with it).")).to_be_visible()
        assert any(f"{many} deadline(s) of it will be deleted" in m for m in dialogs), dialogs
        ctx2.close()

        # Portuguese.
        page.select_option("#lang", "pt")
        expect(page.locator("#nav")).to_contain_text("Visão geral")
        page.select_option("#lang", "en")

        # Every screen: screenshot, first paint on a fresh load.
        for name in SCREENS:
            page.goto("about:blank")
            page.goto(f"{BASE}/console/#/{name}")
            page.wait_for_selector(f"main[data-screen='{name}']")
            perf = page.evaluate(
                """() => ({ fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
                            ready: performance.now() })"""
            )
            figures["firstContentfulPaintMs"][name] = round(perf["fcp"] or -1)
            figures["screenReadyMs"][name] = round(perf["ready"])
            if not (SHOTS / f"{name}.png").exists() or name in ("overview", "datasources"):
                page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

        # Accessibility: axe-core injected by the test only (a context that lets the test add it).
        axe_ctx = browser.new_context(bypass_csp=True, viewport={"width": 1440, "height": 900}, locale="en-US")
        axe_ctx.set_default_timeout(TIMEOUT)
        axe_page = axe_ctx.new_page()
        axe_src = pathlib.Path(AXE).read_text()
        failures = []

        def check(label):
            axe_page.add_script_tag(content=axe_src)
            found = axe_page.evaluate("async () => (await axe.run(document)).violations")
            for v in found:
                if v["impact"] in ("serious", "critical"):
                    targets = [n["target"] for n in v["nodes"]][:5]
                    failures.append(f"{label}: {v['id']} ({v['impact']}): {v['help']} at {targets}")

        axe_page.goto(f"{BASE}/console/")
        axe_page.wait_for_selector("main[data-screen='signin'] #use-dev-token")
        check("signin")
        axe_page.click("#use-dev-token")
        axe_page.wait_for_selector("main[data-screen='overview'] .counter")
        for name in SCREENS:
            axe_page.goto(f"{BASE}/console/#/{name}")
            axe_page.wait_for_selector(f"main[data-screen='{name}']")
            axe_page.wait_for_timeout(300)
            check(name)
        # The builder with blocks (nested, a filter, drag handles), reopened from its source.
        axe_page.goto(f"{BASE}/console/#/builder?id={built_id}")
        axe_page.wait_for_selector("main[data-reopened] fieldset.block[data-type='variable']")
        axe_page.wait_for_timeout(300)
        check("builder with blocks")
        assert not failures, "axe-core: serious or critical violations:\n" + "\n".join(failures)
        browser.close()

    if "preview endpoint absent" in notes or "syntax error shown" in notes:
        # The preview calls the journey expects to fail: the 404 of a build without the
        # endpoint, or the 400 of the template it broke on purpose. Anything else counts.
        errors = [e for e, url in console_errors if not url.endswith("/v1/templates/preview")]
    else:
        errors = [e for e, _ in console_errors]
    assert not errors, "errors in the browser console:\n" + "\n".join(errors)
    assets = [f for f in pathlib.Path(EXAMPLES).parent.joinpath("console").rglob("*") if f.is_file()]
    figures["assets"] = {
        "files": len(assets),
        "bytes": sum(f.stat().st_size for f in assets),
        "gzipBytes": sum(len(gzip.compress(f.read_bytes(), 9)) for f in assets),
    }
    figures["notes"] = notes
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
