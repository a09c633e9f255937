"""End to end in a real browser: Playwright driving Debian's Chromium (never a downloaded build).

1. Log in and label a solution with the keyboard only; the export shows the labels.
2. Phase 1 with the keyboard: move between alternatives, rate, continue, write one's own step.
3. Problem, step and answer texts carrying HTML, <script> and hostile LaTeX render inert: no script
   runs (no dialog, no window flag), no element is created from them, and they show as text.
4. A plan of the lab's plans domain (steps that are judgements: which tasks go on which day) shows its
   task list line by line and one day per step, and is labelled with the keyboard like any solution.

Needs /usr/bin/chromium (or $PRMKIT_CHROMIUM), the playwright package and KaTeX (npm ci --prefix
prmkit/label); `eval "$(bash scripts/services.sh)"` provides them. Skipped, with the reason, without.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the labelling app needs the `serve` extra")
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (its driver, no browser)")

from prmkit.label import auth, projects
from prmkit.label.app import find_katex
from prmkit.label.client import LabelClient
from prmkit.label.db import open_database
from prmkit.schema import Completion, Problem, Solution, Step
from prmkit.testing.labelling import ServerProcess, synthetic_candidates

CHROMIUM = os.environ.get("PRMKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium; "
                                                            "scripts/services.sh does)"),
    pytest.mark.skipif(find_katex() is None, reason="KaTeX not installed (npm ci --prefix prmkit/label)"),
]

HOSTILE = ('<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)">'
           '<b id="injected">bold</b> $\\href{javascript:window.__pwned=3}{click}$ '
           '\\(\\url{javascript:alert(4)}\\) \\[\\htmlData{foo=1}{x}\\] $$\\includegraphics{http://127.0.0.1:9/x.png}$$ '
           '$\\def\\a{\\a\\a}\\a$ $</span><script>alert(5)</script>$ \\(\\text{<img src=x onerror=alert(6)>}\\) '
           '$\\unclosed{ and $x^2$')


def a_plan() -> Solution:
    """One sampled plan of the lab's quick plans preset, as the lab's pools hold it."""
    from prmkit.lab.config import preset
    from prmkit.lab.pools import generate_pool

    return generate_pool(preset("quick", "plans"), seed=0, split="eval", problems=1, samples=1)[0]


PLAN = a_plan()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('browser')}/b.db"
    db = open_database(url)
    with db.write() as s:
        token = auth.issue_token(s, auth.create_user(s, "root", "admin", password="pw-root"))
        for name in ("alice", "bob", "eve", "carol"):
            auth.create_user(s, name, "labeller", password=f"pw-{name}")
        projects.create_project(s, "p2", phase=2, qc_every=0)
        projects.push(s, "p2", synthetic_candidates(2, n_steps=4), strategy="in_order")
        projects.create_project(s, "p1", phase=1, qc_every=0)
        projects.push(s, "p1", synthetic_candidates(1, n_steps=2, alternatives=2), strategy="in_order")
        projects.create_project(s, "evil", phase=2, qc_every=0)
        hostile = Solution(Problem(HOSTILE, answer="42"), [Step([Completion(HOSTILE)]), Step([Completion("ok")])],
                           answer=HOSTILE)
        projects.push(s, "evil", [hostile])
        projects.create_project(s, "plans", phase=2, qc_every=0)
        projects.push(s, "plans", [PLAN], strategy="in_order")
    db.close()
    with ServerProcess(url, log=tmp_path_factory.getbasetemp() / "browser-server.log") as srv:
        yield srv, LabelClient(srv.url, token)


@pytest.fixture
def page():
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context()
        pg = context.new_page()
        pg.dialogs = []
        pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
        yield pg
        browser.close()


def keyboard_login(page, base, name, project):
    page.goto(f"{base}/app?project={project}")
    page.wait_for_url("**/login**")
    # Chromium applies autofocus at a rendering update that may come after the load event (it did under a
    # loaded CI machine): typing before it loses the name, the login fails and the page stays on /login.
    page.wait_for_selector("#name:focus")
    page.keyboard.type(name)
    page.keyboard.press("Tab")
    page.keyboard.type(f"pw-{name}")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/app?project={project}")  # back where the login page was asked for
    page.wait_for_selector("body[data-ready='1']")


def press_and_wait(page, key, locator, count=None):
    """Press a key, then wait for ``locator`` to be visible (or to match ``count`` elements).

    Locator waits, not wait_for_function: the pages' Content-Security-Policy forbids eval.
    """
    page.keyboard.press(key)
    if count is None:
        sync_api.expect(page.locator(locator)).to_be_visible(timeout=30000)
    else:
        sync_api.expect(page.locator(locator)).to_have_count(count, timeout=30000)


def test_keyboard_only_labelling_shows_up_in_the_export(server, page):
    srv, admin = server
    keyboard_login(page, srv.url, "alice", "p2")
    assert page.locator("#problem .katex").count() == 1  # $a + b$ rendered by KaTeX
    assert page.locator("#steps li").count() == 1
    page.keyboard.press("f")  # unsure about step 1
    press_and_wait(page, "1", "#steps li", 2)
    press_and_wait(page, "2", "#steps li", 3)
    press_and_wait(page, "3", "#done")
    assert "found_error" in page.locator("#done").inner_text()
    press_and_wait(page, "n", "#done:visible", 0)
    sync_api.expect(page.locator("#steps li")).to_have_count(1)
    for n in range(2, 5):
        press_and_wait(page, "1", "#steps li", n)
    press_and_wait(page, "1", "#done")
    assert not page.dialogs
    records = [r for r in admin.export("p2") if r.labeller == "alice"]
    assert [r.finish_reason for r in records] == ["found_error", "solution"]
    assert [s.completions[0].rating for s in records[0].steps] == [1, 0, -1]
    assert [s.completions[0].flagged for s in records[0].steps] == [True, False, False]
    assert records[1].ratings == [1, 1, 1, 1] and all(r.total_time_ms > 0 for r in records)


def test_keyboard_only_phase1(server, page):
    srv, admin = server
    keyboard_login(page, srv.url, "bob", "p1")
    press_and_wait(page, "1", "#steps li .alt .r1", 1)
    page.keyboard.press("ArrowDown")
    press_and_wait(page, "2", "#steps li .alt .r0", 1)
    press_and_wait(page, "Enter", "#steps li", 2)  # continue with the second alternative
    press_and_wait(page, "3", "#steps li.current .r-1", 1)
    page.keyboard.press("ArrowDown")
    press_and_wait(page, "3", "#steps li.current .r-1", 2)
    page.keyboard.press("w")
    page.wait_for_selector("#own-text:focus")
    page.keyboard.type("My own last step: $x = 1$.")
    press_and_wait(page, "Control+Enter", "#done")
    [rec] = [r for r in admin.export("p1") if r.labeller == "bob"]
    assert [s.chosen for s in rec.steps] == [1, None] and rec.steps[1].human.text == "My own last step: $x = 1$."
    assert [[c.rating for c in s.completions] for s in rec.steps] == [[1, 0], [-1, -1]]


@pytest.mark.parametrize("csp", ["with CSP", "CSP bypassed"])
def test_hostile_text_renders_inert(server, page, csp):
    # Twice: as served (CSP on), and with the browser ignoring the CSP, so that the escaping alone is tested.
    srv, _ = server
    if csp == "CSP bypassed":
        page = page.context.browser.new_context(bypass_csp=True).new_page()
        page.dialogs = []
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    keyboard_login(page, srv.url, "eve", "evil")
    if page.locator("#steps li").count() == 1:
        press_and_wait(page, "1", "#steps li", 2)
    page.wait_for_timeout(300)  # give an onerror or a timer a chance to fire
    assert page.evaluate("window.__pwned") is None
    assert page.dialogs == []
    injected = page.evaluate("""() => document.querySelectorAll(
        '#task script, #task img, #task iframe, #task object, #task [onerror], #task #injected, '
        + '#task a[href^="javascript"], #task [data-foo]').length""")
    assert injected == 0
    problem = page.locator("#problem").inner_text()
    assert "<script>window.__pwned=1;alert(1)</script>" in problem and '<b id="injected">' in problem
    assert "<img src=x" in page.locator("#steps li").first.inner_text()
    assert "<script>" in page.locator("#guess").inner_text()
    assert page.locator("#problem .katex").count() >= 3  # the harmless mathematics still renders


def test_a_plan_shows_its_tasks_and_one_day_per_step_and_is_labelled_by_keyboard(server, page):
    srv, admin = server
    keyboard_login(page, srv.url, "carol", "plans")
    lines = page.locator("#problem").inner_text().splitlines()
    for task in PLAN.problem.problem.splitlines():  # every task on its own line, as written
        assert task in lines, (task, lines)
    assert page.locator("#problem .katex").count() == 0  # a plan has no mathematics to typeset
    first = page.locator("#steps li").first.inner_text()
    assert PLAN.texts[0] in first and PLAN.texts[1] not in first  # one day per step
    press_and_wait(page, "1", "#steps li", 2)  # day 1 fine
    assert PLAN.texts[1] in page.locator("#steps li").nth(1).inner_text()
    press_and_wait(page, "3", "#done")  # day 2 judged wrong: the task ends at the first error
    assert "found_error" in page.locator("#done").inner_text() and not page.dialogs
    [rec] = [r for r in admin.export("plans") if r.labeller == "carol"]
    assert [st.completions[0].rating for st in rec.steps] == [1, -1] and rec.finish_reason == "found_error"
    assert [st.completions[0].text for st in rec.steps] == PLAN.texts[:2]
    assert rec.problem.problem == PLAN.problem.problem
