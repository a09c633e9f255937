"""Mathematics in the labelling app: where it starts and ends, and that set-up installs KaTeX.

1. ``segments`` (prmkit/label/static/render.js, a pure function run here by Node) on a table of cases
   that grows from real failures: PRM800K writes prices as ``$\\$1.24$``, and ``\\$`` is a literal dollar
   inside and outside mathematics.
2. The same PRM800K problem rendered by the app in a real Chromium (Playwright, as in
   tests/test_label_browser.py): no KaTeX error, the prose outside mathematics.
3. ``bootstrap.sh --katex`` (what ``make venv`` runs) calls ``npm ci`` once, not again when installed,
   again when the lock changes, and says what is missing where npm is not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RENDER_JS = REPO / "prmkit" / "label" / "static" / "render.js"
# PRM800K phase 1 (and MATH test), verbatim: two prices, each `$\$...$`.
PENCILS = ("Three pencils and a jumbo eraser cost $\\$1.24$. Five pencils and a jumbo eraser cost $\\$1.82$. "
           "No prices include tax. In cents, what is the cost of a pencil?")

# (text, segments as (kind, content)): "text" is shown as is, "tex" goes to KaTeX, "display" is display math.
CASES = [
    (PENCILS, [("text", "Three pencils and a jumbo eraser cost "), ("tex", "\\$1.24"),
               ("text", ". Five pencils and a jumbo eraser cost "), ("tex", "\\$1.82"),
               ("text", ". No prices include tax. In cents, what is the cost of a pencil?")]),
    ("I paid \\$5 for $x$ apples", [("text", "I paid $5 for "), ("tex", "x"), ("text", " apples")]),
    ("$x$ costs \\$2", [("tex", "x"), ("text", " costs $2")]),
    ("$\\$$", [("tex", "\\$")]),
    ("$a \\$ b$ \\$", [("tex", "a \\$ b"), ("text", " $")]),
    ("$$a\\\\b$$", [("display", "a\\\\b")]),  # \\ is a line break, not an escape of what follows
    ("\\[c\\\\\\]", [("display", "c\\\\")]),
    ("\\(d\\) and $e$", [("tex", "d"), ("text", " and "), ("tex", "e")]),
    ("$x", [("text", "$x")]),  # unclosed: shown as typed
    ("$\\$", [("text", "$$")]),  # the only `$` after the opener is escaped: nothing closes it
]


@pytest.fixture(scope="module")
def node_segments():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found (render.js is tested with Node; apt-get install nodejs)")
    script = ("const {segments} = require(process.argv[1]);"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(texts.map(segments)));")
    out = subprocess.run([node, "-e", script, str(RENDER_JS)], input=json.dumps([t for t, _ in CASES]),
                         capture_output=True, text=True, check=True, timeout=60)
    return dict(zip([t for t, _ in CASES], json.loads(out.stdout)))


def _kind(seg: dict) -> tuple[str, str]:
    if "text" in seg:
        return "text", seg["text"]
    return ("display" if seg["display"] else "tex"), seg["tex"]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[t[:30] for t, _ in CASES])
def test_segments(node_segments, text, expected):
    assert [_kind(s) for s in node_segments[text]] == expected


# --- set-up: bootstrap.sh --katex ----------------------------------------------------------------------

FAKE_NPM = """#!/bin/bash
# stands in for npm: records its arguments, "installs" KaTeX where --prefix says
echo "$*" >> "$NPM_CALLS"
prefix=$3
mkdir -p "$prefix/node_modules/katex/dist"
echo '/* katex */' > "$prefix/node_modules/katex/dist/katex.min.js"
"""


@pytest.fixture
def checkout(tmp_path):
    """A copy of what bootstrap.sh --katex touches, and a PATH with the few tools it uses (npm optional)."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "bootstrap.sh", root / "scripts" / "bootstrap.sh")
    (root / "prmkit" / "label").mkdir(parents=True)
    shutil.copy(REPO / "prmkit" / "label" / "package-lock.json", root / "prmkit" / "label" / "package-lock.json")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "cmp", "cp", "touch", "dirname", "mkdir"):  # mkdir: for the fake npm
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} not found")
        (bin_ / tool).symlink_to(found)
    return root, bin_


def run_katex(root: Path, bin_: Path) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_), "NPM_CALLS": str(root / "npm-calls"), "HOME": str(root)}
    return subprocess.run([str(bin_ / "bash"), str(root / "scripts" / "bootstrap.sh"), "--katex"], env=env, check=False,
                          capture_output=True, text=True, timeout=60)


def npm_calls(root: Path) -> list[str]:
    calls = root / "npm-calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_bootstrap_installs_katex_once_and_again_when_the_lock_changes(checkout):
    root, bin_ = checkout
    (bin_ / "npm").write_text(FAKE_NPM)
    (bin_ / "npm").chmod(0o755)
    first = run_katex(root, bin_)
    assert first.returncode == 0, first.stderr
    assert npm_calls(root) == ["ci --prefix prmkit/label --no-audit --no-fund --loglevel=error"]
    assert (root / "prmkit/label/node_modules/katex/dist/katex.min.js").is_file()
    again = run_katex(root, bin_)
    assert again.returncode == 0 and "already installed" in again.stdout
    assert len(npm_calls(root)) == 1  # nothing to do: no npm, no network
    lock = root / "prmkit/label/package-lock.json"
    lock.write_text(lock.read_text().replace('"katex"', '"katex" ', 1))
    assert run_katex(root, bin_).returncode == 0
    assert len(npm_calls(root)) == 2


def test_bootstrap_without_npm_says_what_is_missing_and_goes_on(checkout):
    root, bin_ = checkout
    out = run_katex(root, bin_)
    assert out.returncode == 0
    assert "npm not found" in out.stderr and "KaTeX is not installed" in out.stderr
    assert not (root / "prmkit/label/node_modules").exists()


def test_make_venv_runs_the_katex_step():
    if shutil.which("make") is None:
        pytest.skip("make not found")
    # -B: as on a fresh checkout, whatever is installed here; -n: print, run nothing
    out = subprocess.run(["make", "-n", "-B", "venv"], cwd=REPO, capture_output=True, text=True, check=True)
    assert "bash scripts/bootstrap.sh --katex" in out.stdout.splitlines()
    for target in ("run", "test"):
        assert "bootstrap.sh --katex" in subprocess.run(["make", "-n", "-B", target], cwd=REPO, capture_output=True,
                                                        text=True, check=True).stdout


# --- in a real browser ----------------------------------------------------------------------------------

CHROMIUM = os.environ.get("PRMKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser_server(tmp_path_factory):
    pytest.importorskip("fastapi", reason="the labelling app needs the `serve` extra")
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (its driver, no browser)")
    from prmkit.label import auth, projects
    from prmkit.label.app import find_katex
    from prmkit.label.db import open_database
    from prmkit.schema import Completion, Problem, Solution, Step
    from prmkit.testing.labelling import ServerProcess

    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; scripts/services.sh does)")
    if find_katex() is None:
        pytest.skip("KaTeX not installed (make venv, or npm ci --prefix prmkit/label)")
    url = f"sqlite:///{tmp_path_factory.mktemp('math')}/m.db"
    db = open_database(url)
    with db.write() as s:
        auth.create_user(s, "ann", "labeller", password="pw-ann")
        projects.create_project(s, "pencils", phase=2, qc_every=0)
        step = "So a pencil costs $\\$1.82 - \\$1.24 = \\$0.58$ for two pencils, \\$0.29 each."
        projects.push(s, "pencils", [Solution(Problem(PENCILS, answer="29"), [Step([Completion(step)])],
                                              answer="29")])
    db.close()
    with ServerProcess(url, log=tmp_path_factory.getbasetemp() / "math-server.log") as srv:
        yield srv


@pytest.mark.slow
def test_escaped_dollars_render_in_the_browser(browser_server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page()
        page.goto(f"{browser_server.url}/app?project=pencils")
        page.wait_for_url("**/login**")
        page.wait_for_selector("#name:focus")  # autofocus may land after the load event: type only then
        page.keyboard.type("ann")
        page.keyboard.press("Tab")
        page.keyboard.type("pw-ann")
        page.keyboard.press("Enter")
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator("#task .katex-error").count() == 0
        assert page.locator("#problem .katex").count() == 2
        assert page.locator("#problem .math .katex-html").all_inner_texts() == ["$1.24", "$1.82"]
        prose = page.evaluate("""() => Array.from(document.getElementById('problem').childNodes)
            .filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join('|')""")
        assert prose == ("Three pencils and a jumbo eraser cost |. Five pencils and a jumbo eraser cost |. "
                         "No prices include tax. In cents, what is the cost of a pencil?")
        step = page.locator("#steps li").first
        assert step.locator(".katex").count() == 1 and step.locator(".katex-error").count() == 0
        assert "two pencils, $0.29 each." in step.inner_text()
        browser.close()
