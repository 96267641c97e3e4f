"""Execute the tour's notebooks and write them as HTML pages with their outputs.

``build(out_dir)`` runs every notebook of ``docs/tour/`` top to bottom in a fresh Jupyter kernel
(``nbclient``), writes ``NN_name.html`` per notebook (``nbconvert``, figures embedded), the
executed ``NN_name.ipynb`` beside it, ``index.html`` linking them (and the report, when the tour
sits inside one) and ``metadata.json`` (versions, git commit, seconds per notebook).  The
report's index links ``tour/index.html`` when it exists (:mod:`reports._report`).

Each page carries the report's image check (``data-images-ok`` / ``data-images-total`` on
``<body>``), which the headless-browser test reads.  The pages need no network: nbconvert's "lab"
template (no jQuery or require.js), and MathJax copied from the jupyter-server-mathjax package
into ``mathjax/`` beside them (:func:`tour._page_style.copy_mathjax`) instead of a CDN.  Each
file is written through a temporary file and a rename (:func:`integrators._files.write_atomic`), so a
page that is a hard link to a file elsewhere is replaced, never written through.  Each
executed notebook records the hash of its source (``metadata.sms_langevin.source_sha256``), so the
documentation site reuses it while the source is unchanged (``docs/hooks.py``).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from integrators._files import write_atomic
from tour._notebooks import NOTEBOOK_DIR, notebooks
from tour._page_style import CHECK_SCRIPT, STYLE, copy_mathjax, mathjax_head

ROOT = NOTEBOOK_DIR.parents[1]
CELL_TIMEOUT = 600  # seconds per cell: the notebooks need far less; a hung cell fails the build
MATHJAX_DIR = "mathjax"  # MathJax beside the pages (copied from the jupyter-server-mathjax package)


class NotebookFailed(RuntimeError):
    """A notebook raised (or its kernel died) while executing; the message names it."""


@dataclass
class Page:
    """One executed notebook: its source, title, promise ("after this notebook you can ...") and page."""

    source: Path
    title: str
    promise: str
    html: str
    seconds: float


def read(path: Path):
    """The notebook of a jupytext percent-format source."""
    import jupytext
    return jupytext.read(path)


def title_and_promise(nb) -> tuple[str, str]:
    """The first markdown cell's heading and its "you will be able to" paragraph."""
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    lines = [] if first is None else first.source.splitlines()
    title = next((ln.lstrip("# ").strip() for ln in lines if ln.startswith("#")), "untitled")
    promise = next((ln.strip() for ln in lines if "able to" in ln.lower()), "")
    return title, promise


def execute(nb, *, timeout: int = CELL_TIMEOUT):
    """Run every cell of ``nb`` in order in a fresh kernel (working directory: the repository);
    raises ``nbclient.exceptions.CellExecutionError`` naming the failing cell."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    config = Config()
    config.KernelManager.transport = "ipc"  # a local kernel: unix sockets (ipykernel warns of plain-text TCP)
    with tempfile.TemporaryDirectory(prefix="sms-langevin-kernel-") as sockets:
        # absolute socket paths: a relative prefix is resolved in the kernel's folder by the kernel and
        # in the caller's by the client, which then never finds it
        config.KernelManager.ip = str(Path(sockets) / "kernel-ipc")
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", config=config,
                                resources={"metadata": {"path": str(ROOT)}})
        client.execute()
    return nb


def stamp(nb, source: Path) -> None:
    """Record in ``nb``'s metadata the hash of the source it was executed from."""
    nb.metadata["sms_langevin"] = {"source_sha256": hashlib.sha256(Path(source).read_bytes()).hexdigest()}


def write_page(nb, path: Path) -> None:
    """The executed notebook as one HTML page (figures embedded as data URIs) that loads nothing
    from the network: MathJax from ``mathjax/`` beside it, copied there if missing.  The page is
    titled by the notebook's first heading (nbconvert's default title is "Notebook")."""
    from nbconvert import HTMLExporter

    url = f"{MATHJAX_DIR}/MathJax.js"
    title, _ = title_and_promise(nb)
    body, _ = HTMLExporter(template_name="lab", mathjax_url=url).from_notebook_node(
        nb, resources={"metadata": {"name": title}})
    loader = f'<script src="{url}"> </script>'
    if loader not in body:
        raise RuntimeError("nbconvert's page no longer loads MathJax as tour/_build.py expects")
    body = offline(body.replace(loader, mathjax_head(url), 1))
    body = body.replace("</body>", f"{CHECK_SCRIPT}\n</body>", 1)
    copy_mathjax(path.parent / MATHJAX_DIR)
    write_atomic(path, body)


REMOTE = re.compile(r"""src=["']https?://|import\(["']https?://""")


def offline(body: str) -> str:
    """The page without what the lab template loads from CDNs and these notebooks never use:
    require.js (for widgets and JavaScript outputs) and mermaid (loaded only for diagrams); raises
    ``RuntimeError`` if anything else would still be fetched from the network."""
    body = re.sub(r"""<script src=["']https?://[^"']*require[^"']*["']>\s*</script>""", "", body)
    if "<div class=\"jp-Mermaid\">" not in body:  # a diagram output; the script names the class too
        body = re.sub(r"<script type=\"module\">(?:(?!</script>).)*?mermaid.*?</script>", "", body, flags=re.S)
    remote = REMOTE.search(body)
    if remote:
        raise RuntimeError(f"a tour page would load from the network: {body[remote.start():remote.start() + 120]}")
    return body


def write_notebook(nb, path: Path) -> None:
    import nbformat
    text = nbformat.writes(nb)
    write_atomic(path, text if text.endswith("\n") else text + "\n")  # as nbformat.write ends it


def write_index(path: Path, pages: list[Page], report_link: str | None) -> None:
    items = "\n".join(
        f"<li><a href='{html.escape(p.html)}'>{html.escape(p.title)}</a><br><small>{html.escape(p.promise)}"
        f"</small></li>" for p in pages)
    back = f"<p><a href='{html.escape(report_link)}'>Back to the report</a></p>" if report_link else ""
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>SMS-Langevin: a guided tour</title>"
            f"{STYLE}</head><body>\n<h1>A guided tour of stochastic-gradient kinetic Langevin</h1>\n{back}\n"
            "<p>Each notebook runs in a minute or two on a laptop CPU and ends with exercises; "
            "<code>tour.check(exercise_id, answer)</code> says whether an answer is right.</p>\n"
            f"<ol>\n{items}\n</ol>\n{CHECK_SCRIPT}\n</body></html>\n")
    write_atomic(path, page)


def write_metadata(path: Path, pages: list[Page], run_metadata: dict) -> None:
    meta = dict(run_metadata)
    meta["notebooks"] = {p.source.name: {"seconds": round(p.seconds, 1), "page": p.html} for p in pages}
    meta["seed"] = "each notebook fixes its own seeds in its cells"
    write_atomic(path, json.dumps(meta, indent=2) + "\n")


def build(out_dir: Path | str, names=None, *, run_metadata: dict, timeout: int = CELL_TIMEOUT,
          progress=None) -> list[Page]:
    """Execute the notebooks (all, or those ``names`` selects) and write their pages, the index and
    the metadata (``run_metadata``, the caller's run metadata, with each notebook's time) into
    ``out_dir``; returns the pages in order."""
    sources = notebooks(names)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = []
    for source in sources:
        t0 = time.time()
        try:
            nb = execute(read(source), timeout=timeout)
        except Exception as exc:  # nbclient's CellExecutionError (or a dead kernel): name the notebook
            detail = f"{getattr(exc, 'ename', type(exc).__name__)}: {getattr(exc, 'evalue', exc)}"
            raise NotebookFailed(f"tour notebook {source.name} failed: {detail}".splitlines()[0]) from exc
        stamp(nb, source)
        write_page(nb, out_dir / f"{source.stem}.html")
        write_notebook(nb, out_dir / f"{source.stem}.ipynb")
        title, promise = title_and_promise(nb)
        pages.append(Page(source, title, promise, f"{source.stem}.html", time.time() - t0))
        if progress:
            progress(f"{source.stem}: {pages[-1].seconds:.0f} s")
    report_index = out_dir.parent / "index.html"
    write_index(out_dir / "index.html", pages, "../index.html" if report_index.exists() else None)
    write_metadata(out_dir / "metadata.json", pages, run_metadata)
    return pages
