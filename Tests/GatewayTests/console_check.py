"""Drives the console in Debian's chromium with Playwright, as an operator would.

Run by ConsoleTests with a running stack; everything it needs comes in CONSOLE_CHECK (JSON):
base, chromium, screenshots, admin {email, password}, outsider {email, password},
user {id, token}, driver {id, token}, letter {deadLetterTopic, partition, offset}, deleted {id,
signal: a file the script writes when the test is to publish another acknowledgement}.
Prints one JSON line of findings; exits 1 with the reason when a check fails.
"""
import json
import os
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

settings = json.loads(os.environ["CONSOLE_CHECK"])
errors = []
base = settings["base"]
shots = settings["screenshots"]
findings = {}


def fail(reason):
    print(json.dumps({"failed": reason, **findings}))
    sys.exit(1)


def step(name, action):
    """Runs one step; a timeout names the step, the page and what its console said."""
    try:
        return action()
    except Exception as error:  # Playwright's timeouts and failed assertions alike
        current = globals().get("page")
        where = current.url if current else "?"
        said = current.inner_text("#status") if current and current.query_selector("#status") else ""
        fail(f"{name}: {error.__class__.__name__}: {str(error).splitlines()[0]} (at {where}, status '{said}', console errors {errors})")


def call(method, path, token, body):
    request = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def sign_in(page, account):
    page.goto(base + "/console/events")
    if "/console/login" not in page.url:
        fail("a browser without a session was not sent to sign in: " + page.url)
    page.fill("#email", account["email"])
    page.fill("#password", account["password"])
    with page.expect_navigation():
        page.click("button[type=submit]")


def no_sideways_scroll(page, name):
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    if overflow > 1:
        fail(f"the {name} page scrolls sideways by {overflow}px at phone width")


with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=settings["chromium"], args=["--no-sandbox"])

    # Someone who is not an admin signs in and is refused.
    outsider = browser.new_page()
    sign_in(outsider, settings["outsider"])
    if "not an admin" not in outsider.content():
        fail("a non-admin's sign-in was not refused: " + outsider.url)
    outsider.goto(base + "/console/users")
    if "/console/login" not in outsider.url:
        fail("a refused sign-in left a session")
    outsider.close()

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: dialog.accept())
    sign_in(page, settings["admin"])
    if not page.url.endswith("/console/events"):
        fail("the admin's sign-in did not open the Events page: " + page.url)

    # Events: a username change appears within 2 s.
    step("the Events page's stream", lambda: page.wait_for_selector("#status:has-text('Live')", timeout=10_000))
    user = settings["user"]
    name = "renamed_" + str(int(time.time() * 1000) % 10**8)
    started = time.monotonic()
    call("PUT", "/auth/v1/user", user["token"], {"data": {"username": name}})
    row = f"tr[data-type='auth.profile.updated.v1'][data-key='{user['id']}']"
    try:
        page.wait_for_selector(row, timeout=2_000)
    except Exception:
        fail("the profile update did not appear on the Events page within 2 s")
    findings["eventSeconds"] = round(time.monotonic() - started, 3)
    if name not in page.inner_text(row):
        fail("the event's row does not show the new username")
    page.fill("#filter", "auth.profile")
    if page.locator("#event-rows tr").count() == 0:
        fail("filtering by type hid the profile update")
    page.click("#pause")
    page.wait_for_selector("#chart svg")
    page.screenshot(path=f"{shots}/events.png", full_page=True)

    # Consumers: every catalogued group with its partitions.
    page.goto(base + "/console/consumers")
    page.wait_for_selector("section[data-group='edit-render-workers'] tbody tr")
    findings["renderPartitions"] = page.locator("section[data-group='edit-render-workers'] tbody tr").count()
    page.screenshot(path=f"{shots}/consumers.png", full_page=True)

    # Dead letters: the letter is listed; replayed, it leaves the list.
    letter = settings["letter"]
    card = f"article[data-letter='{letter['deadLetterTopic']}/{letter['partition']}/{letter['offset']}']"
    page.goto(base + "/console/dead-letters")
    page.wait_for_selector(card, timeout=15_000)
    page.screenshot(path=f"{shots}/dead-letters.png", full_page=True)
    page.click(f"{card} button")
    try:
        page.wait_for_selector(card, state="detached", timeout=15_000)
    except Exception:
        fail("the replayed dead letter stayed on the list")

    # Users: the count, and a role set from the list.
    page.goto(base + "/console/users")
    select = f"select[data-user='{user['id']}']"
    page.wait_for_selector(select)
    page.select_option(select, "driver")
    step("setting a role", lambda: page.wait_for_selector("#status:has-text('now a driver')", timeout=10_000))
    page.wait_for_selector(select)
    if page.input_value(select) != "driver":
        fail("the list does not show the role just set")
    # A deleted account and what the services erased: four of five, the last arriving live.
    gone = settings["deleted"]
    row = f"tr[data-deleted='{gone['id']}']"
    step("the deleted account listed", lambda: page.wait_for_selector(f"{row}:has-text('4 of 5')", timeout=15_000))
    if "likes 2" not in page.inner_text(row):
        fail("the deleted account's row does not say what social erased")
    with open(gone["signal"], "w") as signal:
        signal.write("go")
    step("the last acknowledgement shown live", lambda: page.wait_for_selector(f"{row}:has-text('complete')", timeout=10_000))
    page.screenshot(path=f"{shots}/users.png", full_page=True)

    # Deliveries: the driver's marker moves as their positions come.
    driver = settings["driver"]
    page.goto(base + "/console/deliveries")
    page.wait_for_selector("#map path.roads")
    step("the Deliveries page's stream", lambda: page.wait_for_selector("#status:has-text('Live')", timeout=10_000))
    marker = f"#driver-{driver['id']}"
    stamp = lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    call("POST", "/v1/drivers/me/positions", driver["token"], [{"lat": 60.1699, "lng": 24.9384, "speedMps": 8, "recordedAt": stamp()}])
    step("the driver's marker", lambda: page.wait_for_selector(marker, timeout=10_000))
    first = page.get_attribute(marker, "transform")
    time.sleep(1.1)
    call("POST", "/v1/drivers/me/positions", driver["token"], [{"lat": 60.1712, "lng": 24.9450, "speedMps": 8, "recordedAt": stamp()}])
    deadline = time.monotonic() + 10
    while page.get_attribute(marker, "transform") == first:
        if time.monotonic() > deadline:
            fail("the driver's marker did not move")
        time.sleep(0.1)
    findings["marker"] = [first, page.get_attribute(marker, "transform")]
    # On shift: the driver's presence on the drivers channel, counted and shown on their marker.
    step("the driver on shift", lambda: page.wait_for_selector(f"{marker}.on-shift", timeout=10_000))
    if "On shift: 1" not in page.inner_text("#on-shift"):
        fail(f"the on-shift count: {page.inner_text('#on-shift')}")
    if "OpenStreetMap contributors" not in page.inner_text("main"):
        fail("the map does not show its attribution")
    page.screenshot(path=f"{shots}/deliveries.png", full_page=True)

    # Notifications: the user's push, as their lock screen shows it, from the events the test published.
    page.goto(base + "/console/notifications")
    step("a push on the Notifications page", lambda: page.wait_for_selector(
        "#notifications .notification:has-text('Your edit is ready')", timeout=20000))
    page.screenshot(path=f"{shots}/notifications.png", full_page=True)

    # Mail: the user's receipt, caught; its HTML in a frame that runs nothing.
    page.goto(base + "/console/mail")
    step("a receipt on the Mail page", lambda: page.wait_for_selector(
        "#mail-list button:has-text('Your receipt')", timeout=20000))
    page.click("#mail-list button:has-text('Your receipt')")
    step("the receipt opens", lambda: page.wait_for_selector("#mail-view pre:has-text('Total')"))
    if page.get_attribute("#mail-view iframe", "sandbox") != "":
        fail("a mail's HTML is shown in a frame that is not fully sandboxed")
    if "2 × Margherita" not in page.inner_text("#mail-view pre"):
        fail("the receipt does not list the order's items")
    page.screenshot(path=f"{shots}/mail.png", full_page=True)

    # A phone-width screen: every page fits without scrolling sideways.
    phone = context.new_page()
    phone.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    phone.on("pageerror", lambda error: errors.append(str(error)))
    phone.set_viewport_size({"width": 390, "height": 844})
    for name, ready in [("events", "#chart"), ("consumers", "section"), ("dead-letters", "section"), ("users", "table"), ("deliveries", "#map"),
                        ("notifications", ".notification"), ("mail", "#mail-list table")]:
        phone.goto(f"{base}/console/{name}")
        phone.wait_for_selector(ready)
        no_sideways_scroll(phone, name)
    phone.screenshot(path=f"{shots}/deliveries-phone.png", full_page=True)

    if errors:
        fail("the browser's console had errors: " + "; ".join(errors[:5]))
    browser.close()

print(json.dumps({"passed": True, **findings}))
