"""MkDocs hooks of the documentation site (``mkdocs.yml`` names this file).

* The guided tour: every notebook ``docs/tour/NN_name.py`` becomes a page ``tour/NN_name/`` with
  its outputs.  The executed notebook comes from a cache keyed by the source's hash
  (``.cache/docs-tour/``; ``SMS_DOCS_TOUR_CACHE`` moves it): a notebook whose source changed is
  executed again (``tour._build.execute``, a fresh kernel), the others are reused, and an executed
  notebook that ``make tour`` / ``sms-langevin tour`` wrote from the same source (in
  ``SMS_DOCS_TOUR_FROM``, default ``out/tiny/report/tour``) is taken as it is.  mkdocs-jupyter
  renders them; the tour's index page and its navigation entries are generated from
  ``tour.notebooks``, so a new notebook appears without editing ``mkdocs.yml``.
* Mathematics offline: MathJax 2.7 from the jupyter-server-mathjax package is copied into
  ``site/assets/mathjax/`` and configured by ``javascripts/mathjax-config.js`` (generated from
  ``tour._page_style.MATHJAX_CONFIG``, shared with the tour's own HTML pages); the notebook pages'
  own MathJax loader (mkdocs-jupyter's) is removed, the site's typesets them.
* Sphinx roles in docstrings: ``SphinxRoles`` (a griffe extension that ``mkdocs.yml`` gives
  mkdocstrings) turns ``:func:`derive```, ``:class:`~integrators._spec.RunSpec``` ... into
  cross-references, the name resolved as Sphinx would (the object's scope, then its parents'), as
  *optional* autorefs: a link where the target is documented on the site, plain code elsewhere.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import re
import shutil
import sys
import time
from pathlib import Path

from griffe import Extension
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_entries  # noqa: E402 (docs/ is not a package: found beside this file)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tour._page_style import MATHJAX_CONFIG, copy_mathjax  # noqa: E402

log = logging.getLogger("mkdocs.hooks.tour")
TOUR_NAV_TITLE = "Guided tour"
CACHE = Path(os.environ.get("SMS_DOCS_TOUR_CACHE", ROOT / ".cache" / "docs-tour"))
FROM = Path(os.environ.get("SMS_DOCS_TOUR_FROM", ROOT / "out" / "tiny" / "report" / "tour"))
# :role:`target`, :role:`~a.b.target`, :role:`title <target>` (roles of Sphinx's Python domain)
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|data|mod|attr|exc|obj|const|ref):`([^`]+)`")
# a converted role inside a code block, where markdown escaped it: shown as the bare name
ESCAPED_AUTOREF = re.compile(r'&lt;autoref identifier="[^"]*" optional&gt;'
                             r"&lt;code&gt;(.*?)&lt;/code&gt;&lt;/autoref&gt;")
MATHJAX_BLOCK = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)

_state: dict = {}


def resolve_role_target(obj, target: str) -> str:
    """The full path of ``target`` as written in a docstring of ``obj``: a name of ``obj``'s scope or
    of its parents' (an imported name followed to where it is defined), else ``target`` itself."""
    head, _, rest = target.lstrip(".").partition(".")
    try:
        path = obj.resolve(head)
        path = f"{path}.{rest}" if rest else path
    except Exception:  # noqa: BLE001 (griffe raises several kinds for a name it does not know)
        path = target.lstrip(".")
    for _ in range(8):  # follow re-exports (an alias of an alias ...) while they are loaded
        try:
            found = obj.modules_collection.get_member(path)
        except Exception:  # noqa: BLE001
            break
        if not getattr(found, "is_alias", False) or found.target_path == path:
            break
        path = found.target_path
    return path


def convert_roles(text: str, obj) -> str:
    """``text`` with every Sphinx role made an optional autoref (a link if the target is on the site)."""

    def one(match: re.Match) -> str:
        body = match.group(1).strip()
        titled = re.fullmatch(r"(.*?)\s*<([^<>]+)>", body)
        if titled:
            title, target = titled.group(1), titled.group(2)
        else:
            target = body.lstrip("~")
            title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        path = resolve_role_target(obj, target.lstrip("~"))
        return f'<autoref identifier="{html.escape(path)}" optional><code>{html.escape(title)}</code></autoref>'

    return SPHINX_ROLE.sub(one, text)


class SphinxRoles(Extension):
    """Griffe extension: the Sphinx roles of every docstring of a loaded package as autorefs."""

    def on_package(self, *, pkg, **kwargs) -> None:
        stack = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None and SPHINX_ROLE.search(obj.docstring.value):
                obj.docstring.value = convert_roles(obj.docstring.value, obj)
                obj.docstring.__dict__.pop("parsed", None)  # parsed lazily: drop a stale parse
            stack.extend(m for m in obj.members.values() if not m.is_alias)


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stored_hash(ipynb: Path) -> str | None:
    try:
        return json.loads(ipynb.read_text())["metadata"].get("sms_langevin", {}).get("source_sha256")
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def executed_notebook(source: Path) -> Path:
    """The executed notebook of ``source`` in the cache, executing it only when no executed copy of
    this exact source exists (in the cache or in ``make tour``'s output)."""
    from tour import _build as build

    digest = source_hash(source)
    cached = CACHE / "tour" / f"{source.stem}.ipynb"
    if stored_hash(cached) == digest:
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    made = FROM / f"{source.stem}.ipynb"
    if stored_hash(made) == digest:
        shutil.copyfile(made, cached)
        log.info("tour: %s taken from %s", source.name, FROM)
        return cached
    t0 = time.time()
    nb = build.execute(build.read(source))
    build.stamp(nb, source)
    build.write_notebook(nb, cached)
    log.info("tour: executed %s in %.0f s", source.name, time.time() - t0)
    return cached


def on_config(config):
    from tour import _build as build
    from tour._notebooks import notebooks

    sources = notebooks()
    pages = []
    for source in sources:
        ipynb = executed_notebook(source)
        import nbformat
        title, promise = build.title_and_promise(nbformat.read(str(ipynb), as_version=4))
        pages.append({"source": source, "ipynb": ipynb, "title": title, "promise": promise,
                      "uri": f"tour/{source.stem}.ipynb"})
    _state["tour"] = pages
    nav = config["nav"] or []
    for i, entry in enumerate(nav):
        if isinstance(entry, dict) and TOUR_NAV_TITLE in entry:
            nav[i] = {TOUR_NAV_TITLE: ["tour/index.md"] + [{p["title"]: p["uri"]} for p in pages]}
    return config


def tour_index(pages) -> str:
    rows = "\n".join(f"{k + 1}. [{p['title']}]({Path(p['uri']).name})  \n   {p['promise']}"
                     for k, p in enumerate(pages))
    return f"""# A guided tour

A path through stochastic-gradient kinetic Langevin that a student can walk in an afternoon. Each
notebook is a plain-text [jupytext](https://jupytext.readthedocs.io) source in `docs/tour/` (percent
format), shown here executed with its outputs. Each ends with exercises;
`from tour import check; check("2.1", answer)` says whether an answer is right without printing it.

{rows}

To work in one: `.venv/bin/jupytext --to notebook -o 01_splittings.ipynb docs/tour/01_splittings.py`,
or run them all into HTML pages with `make tour` (`sms-langevin tour --out out/tiny`).
"""


@event_priority(100)  # before mkdocs-jupyter wraps the notebook files
def on_files(files, config):
    for page in _state.get("tour", []):
        files.append(File(page["uri"], src_dir=str(CACHE), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    files.append(File.generated(config, "tour/index.md", content=tour_index(_state.get("tour", []))))
    files.append(File.generated(config, "javascripts/mathjax-config.js", content=MATHJAX_CONFIG + "\n"))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith("api/"):
        return api_entries.expand(markdown)  # `::: package.*`: one entry per public module of the package
    return markdown


def on_page_content(content, page, config, files):
    return ESCAPED_AUTOREF.sub(r"\1", content)


def on_post_page(output, page, config):
    if page.file.src_uri.endswith(".ipynb"):
        output = MATHJAX_BLOCK.sub("", output)
    return output


def on_post_build(config):
    dest = Path(config["site_dir"]) / "assets" / "mathjax"
    shutil.rmtree(dest, ignore_errors=True)
    copy_mathjax(dest)
