"""The docs site builds (``mkdocs build --strict``) and renders in a real browser.

The site is built into a temporary directory, and every page is opened in
headless Chromium (a window 1280 px wide): Debian's ``chromium``, driven by
Selenium through Debian's ``chromium-driver`` (never a browser that a tool
downloads; ``make test`` installs both when ``/usr/bin/chromium`` is missing),
twice: served on 127.0.0.1, and opened from disk (``file://``, as the README
tells a reader to).  Each page must have a title and an article with text, log
no error in the browser's console, and show no code block or table wider than
its box (a line cut off at the right edge); opened from disk, every link of the
navigation must lead to a page (not a directory) and the search field must be
there.  In both, a click in the navigation then a search must find pages.

Then the API reference is held against the contract: every public name in the
"Public API" block of the design (``../shared/DESIGN.md``, beside the checkout)
must exist in the package, and have an entry in the reference (an anchor
with its dotted name, or for an attribute, a mention in its class's entry);
every command the design names must exist in the command line and in
``docs/cli.md``.  A name or a command that vanished fails (it was a skip
before issue 46).  The design is looked for beside this checkout, and beside
the main checkout when this one is a ``git worktree`` elsewhere.
"""

from __future__ import annotations

import functools
import http.server
import importlib
import inspect
import logging
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import pytest

import jsonrpc_threads
from jsonrpc_threads.cli import build_parser
from jsonrpc_threads.lsp import uri_to_path

ROOT = Path(__file__).resolve().parent.parent


def _design_path() -> Path:
    """``../shared/DESIGN.md`` beside this checkout, or beside the main checkout of a ``git worktree``."""
    candidates = [ROOT.parent / "shared" / "DESIGN.md"]
    dot_git = ROOT / ".git"
    if dot_git.is_file():  # a worktree: "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(dot_git.read_text(encoding="utf-8").partition("gitdir:")[2].strip())
        candidates.append(gitdir.parent.parent.parent.parent / "shared" / "DESIGN.md")
    return next((path for path in candidates if path.is_file()), candidates[0])


DESIGN = _design_path()
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
#: Seconds the build may take (mkdocstrings reads every module).
BUILD_TIMEOUT_S = 180.0
#: Seconds one page may take to load in the browser.
PAGE_LOAD_S = 30.0
#: Seconds the serving thread gets to stop.
SERVER_STOP_S = 5.0
#: The least text an article holds on a page that rendered.
MIN_ARTICLE_CHARS = 200

pytestmark = pytest.mark.timeout(600)


# -- the contract ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """One public name of the contract: ``path`` (dotted, as imported), or a ``member`` of it."""

    path: str
    member: Optional[str] = None

    @property
    def dotted(self) -> str:
        return f"{self.path}.{self.member}" if self.member else self.path


def _strip_parentheses(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\([^()]*\)", "", text)
    return text.split("(", 1)[0]  # an argument list that goes on to the next line


def _members(text: str) -> List[str]:
    return re.findall(r"(?:^|[\s/])\.([A-Za-z_]\w*)", _strip_parentheses(text.split("#", 1)[0]))


def contract_names(design: str) -> Tuple[List[Name], List[str]]:
    """The names of the design's Public API block, and the command line's commands."""
    section = design.split("## Public API", 1)[1]
    block = section.split("```python", 1)[1].split("```", 1)[0]
    names: List[Name] = []
    full: Dict[str, str] = {}  # short class name -> dotted path
    commands: List[str] = []
    current: Optional[str] = None
    in_cli = in_also = False
    also = ""
    for line in block.splitlines():
        if line.startswith("Also relied upon"):
            in_also, also = True, line.split(":", 1)[1]
            continue
        if in_also:
            if line.startswith(" "):
                also += " " + line
                continue
            in_also = False
        if line.startswith("python -m jsonrpc_threads"):
            in_cli, current = True, None
            continue
        if in_cli:
            command = re.match(r"^\s+(--[\w-]+|[a-z]+)\b", line)
            if command:
                commands.append(command.group(1))
            continue
        top = re.match(r"^([A-Za-z_][\w.]*)\(", line)
        if top:
            dotted = top.group(1)
            if not dotted.startswith("jsonrpc_threads."):
                dotted = f"jsonrpc_threads.{dotted}"
            parts = dotted.split(".")
            if parts[-1][:1].islower() and len(parts) > 1 and parts[-2][:1].isupper():  # Class.method(
                current = ".".join(parts[:-1])
                names.append(Name(current))
                names.append(Name(current, parts[-1]))
            else:
                current = dotted
                names.append(Name(dotted))
            full[current.rsplit(".", 1)[-1]] = current
            continue
        error = re.match(r"^\s+([A-Z]\w+)\s+is also\b(.*)$", line)
        if error:
            current = f"jsonrpc_threads.{error.group(1)}"
            names.append(Name(current))
            names.extend(Name(current, member) for member in _members(error.group(2).split(";", 1)[-1]))
            continue
        codes = re.findall(r"\b([A-Z]\w+)\s+-32\d{3}", line)
        if codes:
            names.extend(Name(f"jsonrpc_threads.{code}") for code in codes)
            continue
        if current and line.lstrip().startswith("."):
            names.extend(Name(current, member) for member in _members(line.strip()))
    for segment in also.split(";"):
        match = re.match(r"\s*([A-Z]\w+)(.*)$", segment)
        if match and match.group(1) in full:
            names.extend(Name(full[match.group(1)], member) for member in _members(match.group(2)))
    unique = list(dict.fromkeys(names))
    return unique, list(dict.fromkeys(commands))


def resolve(name: Name) -> Any:
    """The object the name stands for; AttributeError/ImportError when the package lacks it."""
    parts = name.path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = getattr(obj, part)
        break
    else:
        raise ImportError(name.path)
    if name.member is None:
        return obj
    if hasattr(obj, name.member):
        return getattr(obj, name.member)
    # The source of the class's own methods (not of the class: the exceptions are known by
    # ``jsonrpc_threads.errors``, their ``__module__``, which is not the file that holds them).
    methods = vars(obj).values() if inspect.isclass(obj) else ()
    source = "".join(inspect.getsource(method) for method in methods if inspect.isfunction(method))
    if re.search(rf"self\.{re.escape(name.member)}\s*[:=]", source):
        return name.member  # an instance attribute, set in __init__
    raise AttributeError(name.dotted)


def _load_contract() -> Tuple[List[Name], List[str]]:
    if not DESIGN.is_file():
        return [], []
    return contract_names(DESIGN.read_text(encoding="utf-8"))


CONTRACT, COMMANDS = _load_contract()


def test_the_contract_was_read() -> None:
    if not DESIGN.is_file():
        pytest.skip(f"{DESIGN} is not there (it lies beside the checkout)")
    dotted = {name.dotted for name in CONTRACT}
    expected = {
        "jsonrpc_threads.JsonRpcClient",
        "jsonrpc_threads.JsonRpcClient.request",
        "jsonrpc_threads.JsonRpcClient.cancel",
        "jsonrpc_threads.StdioTransport.stderr_tail",
        "jsonrpc_threads.TransportClosed.returncode",
        "jsonrpc_threads.MethodNotFound",
        "jsonrpc_threads.server.serve",
        "jsonrpc_threads.mcp.McpClient.call_tool",
        "jsonrpc_threads.mcp.ToolRegistry.from_config",
        "jsonrpc_threads.mcp.ToolRegistry.execute_all",
        "jsonrpc_threads.mcp.McpClient.set_logging_level",
        "jsonrpc_threads.HttpTransport.session_id",
    }
    assert expected <= dotted, sorted(expected - dotted)
    assert "jsonrpc_threads.JsonRpcClient.futures" not in dotted
    assert {"--version", "tools", "call", "rpc"} <= set(COMMANDS)


# -- the site in a browser --------------------------------------------------------------------


@dataclass
class Page:
    url: str
    title: str = ""
    article_chars: int = 0
    ids: Set[str] = field(default_factory=set)
    sections: Dict[str, str] = field(default_factory=dict)  # heading id -> text of its doc entry
    console_errors: List[str] = field(default_factory=list)
    overflowing: List[str] = field(default_factory=list)  # code blocks and tables wider than their box
    nav_links: List[str] = field(default_factory=list)  # where the navigation's links point
    search_box: bool = False  # the search field is shown


@dataclass
class Search:
    """A visit as a reader makes it: the home page, a click in the navigation, then a search."""

    landed_on: str  # the URL the click led to
    landed_title: str
    results: int  # search results shown for SEARCH_TERM
    console_errors: List[str]


@dataclass
class Site:
    """The built site as the browser saw it: over HTTP and opened from disk."""

    root: Path
    pages: Dict[str, Page]  # over HTTP: page path ("reference/client.html") -> Page
    disk_pages: Dict[str, Page]  # the same pages opened from disk (file://)
    searches: Dict[str, Search]  # "http", "file" -> what a search found there
    build_log: str

    def reference(self) -> List[Page]:
        return [page for path, page in self.pages.items() if path.startswith("reference/")]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _build(out: Path) -> str:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, f"mkdocs build --strict failed:\n{completed.stderr}"
    return completed.stderr


#: The width pages are checked at (a laptop's), and the height of the window.
WINDOW = (1280, 900)
#: What the search test looks for, and the navigation link it clicks first.
SEARCH_TERM = "ToolRegistry"
NAV_LINK_TEXT = "MCP servers"

COLLECT = """
const article = document.querySelector('article');
const sections = {};
for (const heading of document.querySelectorAll('.doc-heading[id]')) {
    const entry = heading.closest('.doc-object') || heading.parentElement;
    sections[heading.id] = entry ? entry.innerText : '';
}
const overflowing = [];
for (const box of document.querySelectorAll(
        'article pre, article pre > code, article table, article .md-typeset__scrollwrap')) {
    if (box.scrollWidth > box.clientWidth + 1) {
        const first = box.innerText.split('\\n', 1)[0].slice(0, 80);
        overflowing.push(`${box.tagName.toLowerCase()} ${box.scrollWidth}px in ${box.clientWidth}px: ${first}`);
    }
}
const search = document.querySelector('.md-search__input');
return {
    title: document.title,
    article: article ? article.innerText.length : 0,
    ids: Array.from(document.querySelectorAll('[id]'), e => e.id),
    sections: sections,
    overflowing: overflowing,
    nav: Array.from(document.querySelectorAll('.md-sidebar--primary a.md-nav__link[href]'), a => a.href),
    search: !!search && search.getBoundingClientRect().width > 0,
};
"""


def _console_errors(driver: Any) -> List[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def _visit(driver: Any, url: str, wait: Any) -> Page:
    page = Page(url)
    driver.get(url)
    wait(driver).until(lambda d: d.execute_script("return document.readyState") == "complete")
    data = driver.execute_script(COLLECT)
    page.title = data["title"]
    page.article_chars = data["article"]
    page.ids = set(data["ids"])
    page.sections = data["sections"]
    page.overflowing = data["overflowing"]
    page.nav_links = data["nav"]
    page.search_box = data["search"]
    page.console_errors = _console_errors(driver)
    return page


def _search(driver: Any, home: str, wait: Any) -> Search:
    """Open the home page, click a link of the navigation, then search from the page it led to."""
    from selenium.common.exceptions import TimeoutException  # noqa: PLC0415
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    driver.get(home)
    wait(driver).until(lambda d: d.execute_script("return document.readyState") == "complete")
    driver.find_element(By.LINK_TEXT, NAV_LINK_TEXT).click()
    wait(driver).until(lambda d: d.current_url != home and d.execute_script("return document.readyState") == "complete")
    landed_on, landed_title = driver.current_url, driver.title
    fields = driver.find_elements(By.CSS_SELECTOR, "input.md-search__input")
    if not fields:
        return Search(landed_on, landed_title, 0, ["no search field on the page"])
    fields[0].click()
    fields[0].send_keys(SEARCH_TERM)
    try:
        wait(driver).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
    except TimeoutException:
        logging.getLogger(__name__).warning("no search results for %r at %s", SEARCH_TERM, landed_on)
    results = len(driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
    return Search(landed_on, landed_title, results, _console_errors(driver))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them as root)")
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415
    from selenium.webdriver.support.ui import WebDriverWait  # noqa: PLC0415

    def wait(driver: Any) -> Any:
        return WebDriverWait(driver, PAGE_LOAD_S)

    out = tmp_path_factory.mktemp("site")
    log = _build(out)
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False
    serving = threading.Thread(target=server.serve_forever, name="docs-site-server", daemon=True)
    serving.start()
    profile = tmp_path_factory.mktemp("chromium-profile")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    pages: Dict[str, Page] = {}
    disk_pages: Dict[str, Page] = {}
    searches: Dict[str, Search] = {}
    driver = None
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
        driver.set_page_load_timeout(PAGE_LOAD_S)
        bases = {"http": f"http://127.0.0.1:{server.server_address[1]}/", "file": out.as_uri() + "/"}
        for mode, found in (("http", pages), ("file", disk_pages)):
            for html in sorted(out.rglob("*.html")):
                path = html.relative_to(out).as_posix()
                if path != "404.html":
                    found[path] = _visit(driver, bases[mode] + path, wait)
            searches[mode] = _search(driver, bases[mode] + "index.html", wait)
    finally:
        if driver is not None:
            driver.quit()
        server.shutdown()
        server.server_close()
        serving.join(SERVER_STOP_S)
    yield Site(out, pages, disk_pages, searches, log)


def test_every_page_renders(site: Site) -> None:
    nav = {
        "index.html",
        "getting-started.html",
        "threading.html",
        "timeouts.html",
        "failure-modes.html",
        "reference/index.html",
        "reference/client.html",
    }
    assert nav <= set(site.pages), sorted(site.pages)
    for path, page in site.pages.items():
        assert "jsonrpc_threads" in page.title, (path, page.title)
        assert page.article_chars >= MIN_ARTICLE_CHARS, (path, page.article_chars)
        assert page.console_errors == [], (path, page.console_errors)


def test_every_page_opened_from_disk_renders_and_links_to_pages(site: Site) -> None:
    """Issue 37: ``build/site/index.html`` opened from disk, as the README says, is the whole site."""
    assert set(site.disk_pages) == set(site.pages)
    for path, page in site.disk_pages.items():
        assert "jsonrpc_threads" in page.title, (path, page.title)
        assert page.article_chars >= MIN_ARTICLE_CHARS, (path, page.article_chars)
        assert page.console_errors == [], (path, page.console_errors)
        assert page.search_box, f"{path}: no search field"
        assert page.nav_links, f"{path}: no navigation"
        for link in page.nav_links:
            target = uri_to_path(link.split("#", 1)[0])
            assert target.is_file() and target.suffix == ".html", f"{path}: a link to {link}, not a page"
            assert site.root in target.parents, f"{path}: a link out of the site: {link}"


@pytest.mark.parametrize("mode", ["http", "file"])
def test_navigation_and_search_work(site: Site, mode: str) -> None:
    search = site.searches[mode]
    assert search.landed_on.endswith("/mcp.html"), search
    assert search.landed_title.startswith(NAV_LINK_TEXT), search
    assert search.results > 0, f"searching {SEARCH_TERM!r} ({mode}) found nothing: {search}"
    assert search.console_errors == [], search


def test_no_code_line_or_table_is_cut_off_at_1280_pixels(site: Site) -> None:
    """Issue 37: the snippets' ``# expected output`` comments and the reference's Default column stay in view."""
    clipped = {path: page.overflowing for path, page in site.pages.items() if page.overflowing}
    assert clipped == {}, clipped


def test_the_changelog_has_one_title(site: Site) -> None:
    page = site.pages["changelog.html"]
    assert page.title.startswith("Changelog")
    headings = (site.root / "changelog.html").read_text(encoding="utf-8").count("<h1")
    assert headings == 1, headings


def test_the_reference_is_generated_from_the_docstrings(site: Site) -> None:
    client = site.pages["reference/client.html"]
    section = client.sections["jsonrpc_threads.JsonRpcClient.request"]
    docstring = (inspect.getdoc(jsonrpc_threads.JsonRpcClient.request) or "").split("\n\n", 1)[0]
    assert " ".join(docstring.split()) in " ".join(section.split())
    assert ":class:" not in " ".join(page.sections.get(i, "") for page in site.reference() for i in page.sections)


@pytest.mark.parametrize("name", CONTRACT, ids=[name.dotted for name in CONTRACT])
def test_every_public_name_of_the_design_exists(name: Name) -> None:
    """A public name that vanished from the package fails here (issue 46: it was a skip)."""
    try:
        resolve(name)
    except (AttributeError, ImportError) as exc:
        pytest.fail(f"{name.dotted}: the design names it, the package lacks it ({exc!r})")


@pytest.mark.parametrize("name", CONTRACT, ids=[name.dotted for name in CONTRACT])
def test_every_public_name_has_a_reference_entry(site: Site, name: Name) -> None:
    resolve(name)
    pages = site.reference()
    if any(name.dotted in page.ids for page in pages):
        return
    assert name.member is not None, f"no reference entry for {name.dotted}"
    entries = [page.sections.get(name.path, "") for page in pages]
    assert any(re.search(rf"\b{re.escape(name.member)}\b", text) for text in entries), (
        f"no reference entry for {name.dotted} (neither an anchor nor a mention in {name.path}'s entry)"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_of_the_command_line_is_documented(command: str) -> None:
    parser = build_parser()
    known = {option for action in parser._actions for option in action.option_strings}
    for action in parser._actions:
        known.update(getattr(action, "choices", None) or {})
    assert command in known, f"jsonrpc-threads {command}: the design names it, the command line lacks it"
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert re.search(rf"(?<![\w-]){re.escape(command)}\b", page), f"docs/cli.md does not mention {command}"


def test_the_changelog_names_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(jsonrpc_threads.__version__)}\b", changelog, re.M), jsonrpc_threads.__version__
