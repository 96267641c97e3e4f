"""The documentation site in a headless browser, with no network: `mkdocs build --strict` into a
temporary folder, served on 127.0.0.1 by a python http.server thread, opened with Debian's chromium
driven by selenium + chromium-driver (every host but 127.0.0.1 resolves to nothing).  Checks: the
search finds `sample`, the API page of `integrators.sample` lists its parameters, a tour page's
figures load, MathJax typesets the method page and a tour page (no raw TeX left in the text), and
nothing is fetched from another host.  The same raw-TeX check on a page of `tour._build.build`,
opened from disk.  And `--strict` is proven to bite: a copy of the config with a broken link fails.
Read from the built files: no Sphinx role (`:func:`...``) is left as text (the griffe extension of
docs/hooks.py makes them links), a known one became a link to its target, each tour page is titled
by its notebook, and no page nor the search index shows the builder's local paths.
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.experiment]

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs"]
# a Sphinx role as mkdocstrings leaves it: ":func:" and then the name in backticks or <code>
RAW_ROLE = re.compile(r":(?:py:)?(class|meth|func|data|mod|attr|exc|obj|ref):(?:`|<code>|&lt;code)")
RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\$[^$\s][^$]*\$")
# the text a reader sees: code, scripts and MathJax's own (hidden) sources left out
VISIBLE_TEXT = """
const root = document.querySelector('article') || document.body;
const copy = root.cloneNode(true);
copy.querySelectorAll('pre, code, script, style, .MathJax_Preview, .highlight').forEach(e => e.remove());
return copy.innerText;
"""
TYPESET = "return document.querySelectorAll('.MathJax, .MathJax_Display').length"


def browser_paths():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return chromium, driver


@pytest.fixture(scope="module")
def browser():
    chromium, driver = browser_paths()
    if chromium is None or driver is None:
        pytest.skip("chromium and chromedriver are needed (apt-get install chromium chromium-driver; .ci/run "
                    "installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the docs extra")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--window-size=1280,1000", "--disable-background-networking", "--disable-component-update",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    drv = webdriver.Chrome(service=Service(driver), options=options)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("torch", reason="the build executes the tour, whose BNN notebook imports torch")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([*MKDOCS, "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def served(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def wait_for(predicate, timeout=30.0, step=0.25):
    end = time.time() + timeout
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def open_typeset(browser, url):
    """Open ``url`` and wait until MathJax has finished its queue."""
    browser.get(url)
    wait_for(lambda: browser.execute_script(
        "return window.MathJax && MathJax.Hub && MathJax.Hub.queue && MathJax.Hub.queue.pending === 0 "
        "&& MathJax.Hub.queue.running === 0 && document.readyState === 'complete'"))
    time.sleep(0.5)


def no_raw_tex(browser, what):
    text = browser.execute_script(VISIBLE_TEXT)
    raw = [m.group() for m in RAW_TEX.finditer(text)]
    assert not raw, f"raw TeX left in the rendered text of {what}: {raw[:5]}"


def only_local_requests(browser, base):
    names = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    remote = [n for n in names if not n.startswith((base, "data:", "blob:"))]
    assert not remote, f"fetched from another host: {remote}"


def tour_pages(site):
    return sorted(p.parent.name for p in (site / "tour").glob("[0-9][0-9]_*/index.html"))


def test_every_tour_notebook_has_a_page_with_outputs(site):
    from tour._notebooks import notebooks

    assert tour_pages(site) == [p.stem for p in notebooks()]
    for name in tour_pages(site):
        page = (site / "tour" / name / "index.html").read_text()
        assert "data:image/png;base64" in page or "jp-OutputArea-output" in page, f"{name} shows no outputs"
    assert (site / "assets" / "mathjax" / "MathJax.js").exists()


def test_every_tour_notebook_ran_cleanly_in_a_kernel_of_its_own(site):
    """The executed notebooks behind the pages (docs/hooks.py runs each in a fresh kernel, so one
    that leans on another's names fails): as many figures as the sources show, no error output, no
    traceback and no NaN printed."""
    import nbformat

    from tour._notebooks import notebooks

    cache = Path(os.environ.get("SMS_DOCS_TOUR_CACHE", ROOT / ".cache" / "docs-tour")) / "tour"
    for source in notebooks():
        executed = nbformat.read(cache / f"{source.stem}.ipynb", as_version=4)
        outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert not [o for o in outputs if o.get("output_type") == "error"], f"{source.name} raised"
        images = [o for o in outputs if "image/png" in o.get("data", {})]
        assert len(images) == source.read_text().count("plt.show()"), f"{source.name}: {len(images)} figures"
        printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
        assert "Traceback" not in printed and not re.search(r"\bnan\b", printed.lower()), f"{source.name}: NaN"


def built_text(site):
    """Every HTML page of the site and its search index, as (name, text)."""
    for page in sorted(site.rglob("*.html")):
        yield str(page.relative_to(site)), page.read_text(errors="replace")
    yield "search/search_index.json", (site / "search" / "search_index.json").read_text()


def test_no_sphinx_role_is_left_as_text(site):
    raw = {}
    for name, text in built_text(site):
        found = [text[max(0, m.start() - 40):m.end() + 40] for m in RAW_ROLE.finditer(text)]
        found += [text[max(0, at - 40):at + 80] for at in [text.find("&lt;autoref")] if at >= 0]
        if found:
            raw[name] = (len(found), found[:2])
    assert not raw, f"raw Sphinx roles in the built site (docs/hooks.py's SphinxRoles converts them): {raw}"


def test_sphinx_roles_became_links_to_their_targets(site):
    """Roles resolved as Sphinx would: an attribute of the class (``:attr:`rhat``` in
    ``SampleResult``), a re-export followed to its definition (``:func:`integrators.sample```), each
    a link to where the page renders it (the package's public name, not the private module's)."""
    page = (site / "api" / "integrators" / "index.html").read_text()
    for title, target in (("rhat", "integrators.SampleResult.rhat"),
                          ("integrators.sample", "integrators.sample")):
        link = (rf'<a class="autorefs[^"]*"[^>]*href="[^"]*#{re.escape(target)}"[^>]*>'
                rf"<code>{re.escape(title)}</code></a>")
        assert re.search(link, page), f"no link <code>{title}</code> -> #{target} on the API page"


def test_every_tour_page_is_titled_by_its_notebook(site):
    from tour._build import read, title_and_promise
    from tour._notebooks import notebooks

    for source in notebooks():
        title, _ = title_and_promise(read(source))
        page = (site / "tour" / source.stem / "index.html").read_text()
        shown = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
        assert shown.startswith(html.escape(title, quote=False)), (source.name, shown)


def test_tour_builder_page_is_titled_by_its_notebook(tmp_path):
    import nbformat

    from tour._build import write_page

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 9. A title & more\n\nText."),
                                         nbformat.v4.new_code_cell("1")])
    write_page(nb, tmp_path / "page.html")
    shown = re.search(r"<title>(.*?)</title>", (tmp_path / "page.html").read_text()).group(1)
    assert shown == "9. A title &amp; more"


def local_paths() -> list[str]:
    """The builder's paths a page must not show: the checkout, its parent, /work/, the home folder."""
    candidates = [str(ROOT), str(ROOT.parent) + "/", "/work/", str(Path.home()) + "/"]
    return sorted({c for c in candidates if len(c.strip("/")) > 1})


def test_no_page_shows_the_builders_local_path(site):
    shown = {}
    for name, text in built_text(site):
        for path in local_paths():
            at = text.find(path)
            if at >= 0:
                shown.setdefault(name, []).append(text[max(0, at - 60):at + 80])
    assert not shown, f"the built site shows a local path: {shown}"


def test_no_page_loads_from_a_cdn(site):
    for page in site.rglob("*.html"):
        text = page.read_text(errors="replace")
        loads = re.findall(r"""<(?:script|img|iframe)[^>]*\ssrc=["'](https?://[^"']+)""", text)
        loads += re.findall(r"""<link[^>]*rel=["']stylesheet["'][^>]*href=["'](https?://[^"']+)""", text)
        assert not loads, f"{page.relative_to(site)} loads {loads[:3]}"


def test_search_finds_sample(browser, served):
    from selenium.webdriver.common.by import By

    browser.get(served + "/")
    wait_for(lambda: browser.execute_script("return document.readyState === 'complete'"))
    box = browser.find_element(By.CSS_SELECTOR, "input.md-search__input")
    if not box.is_displayed():  # a narrow window hides the box behind the search icon
        browser.find_element(By.CSS_SELECTOR, "label[for='__search']").click()
    box.click()
    box.send_keys("sample")
    items = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".md-search-result__item"), timeout=30)
    assert items, "the search found nothing for 'sample'"
    assert any("sample" in item.text.lower() for item in items)
    only_local_requests(browser, served)


def test_api_page_of_sample_lists_its_parameters(browser, served):
    from selenium.webdriver.common.by import By

    browser.get(served + "/api/integrators/")
    heading = browser.find_element(By.ID, "integrators.sample")
    section = heading.find_element(By.XPATH, "./following-sibling::div[1]")
    text = section.text
    for parameter in ("target", "scheme", "plan", "h", "gamma", "n_chains", "batch_size", "path_refine", "backend"):
        assert re.search(rf"\b{parameter}\b", text), f"the API page of sample does not list {parameter}"
    only_local_requests(browser, served)


def test_method_page_is_typeset(browser, served):
    open_typeset(browser, served + "/method/")
    assert browser.execute_script(TYPESET) >= 10
    no_raw_tex(browser, "the method page")
    only_local_requests(browser, served)


def test_tour_page_figures_load_and_math_is_typeset(browser, served, site):
    name = tour_pages(site)[0]
    open_typeset(browser, f"{served}/tour/{name}/")
    sizes = browser.execute_script(
        "return Array.from(document.querySelectorAll('article img')).map(i => i.complete ? i.naturalWidth : 0)")
    assert sizes and all(w > 0 for w in sizes), f"a figure of {name} did not load: {sizes}"
    assert browser.execute_script(TYPESET) >= 1
    no_raw_tex(browser, f"tour page {name}")
    only_local_requests(browser, served)


def test_tour_builder_page_is_typeset_offline(browser, tmp_path):
    from tour._build import build

    pages = build(tmp_path, ["04"], run_metadata={"seed": 0, "preset": "tour"})
    page = tmp_path / pages[0].html
    assert (tmp_path / "mathjax" / "MathJax.js").exists()
    open_typeset(browser, page.as_uri())
    assert browser.execute_script(TYPESET) >= 1
    no_raw_tex(browser, page.name)
    assert browser.execute_script("return document.body.getAttribute('data-images-ok')") == \
        browser.execute_script("return document.body.getAttribute('data-images-total')")
    names = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(n.startswith(("file:", "data:")) for n in names), names


def test_strict_build_fails_on_a_broken_link(tmp_path):
    """A copy of the site's sources with one page linking to a page that does not exist."""
    import yaml

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().split("\nhooks:")[0])  # no hooks, no nav
    config.update(docs_dir=str(docs), site_dir=str(tmp_path / "site"), plugins=["search"], nav=["index.md"],
                  exclude_docs=None, extra_javascript=[])
    config = {k: v for k, v in config.items() if v is not None}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([*MKDOCS, "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "missing.md" in proc.stderr, proc.stderr[-2000:]
    (docs / "index.md").write_text("# Home\n\nNo links.\n")
    fixed = subprocess.run([*MKDOCS, "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
