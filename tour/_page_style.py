"""What every HTML page of the project shares, the report's and the tour's: the style sheet, and
a script that, once a page has loaded, records on ``<body>`` how many of its images loaded
(``data-images-ok`` / ``data-images-total``; the headless-browser tests read it)."""

CHECK_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-images-ok', String(ok));
  document.body.setAttribute('data-images-total', String(imgs.length));
});
</script>"""

STYLE = """<style>
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
img { max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.8em; }
td, th { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
.fails { background: #fdd; } .holds { background: #efe; }
figcaption { font-size: 0.9em; margin: 0.4em 0 1.6em; }
pre { background: #f6f6f6; padding: 0.6em; font-size: 0.8em; }
</style>"""

# ------------------------------------------------------------------ mathematics, offline
# MathJax 2.7 from the PyPI package jupyter-server-mathjax (its static files, inside the wheel), copied
# beside the pages that need it: no page fetches anything from a CDN.  HTML-CSS output with the
# STIX-Web fonts the package ships (its only font set).
MATHJAX_COMBINED = "TeX-AMS-MML_HTMLorMML-full"  # the package's one combined configuration: load with ?config=
MATHJAX_CONFIG = """window.MathJax = {
  TeX: {equationNumbers: {autoNumber: "AMS"}},
  tex2jax: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]], displayMath: [["$$", "$$"], ["\\\\[", "\\\\]"]],
            processEscapes: true, processEnvironments: true},
  "HTML-CSS": {availableFonts: [], imageFont: null, preferredFont: null, webFont: "STIX-Web"},
  messageStyle: "none",
  showProcessingMessages: false
};"""
MATHJAX_SKIP = ("a11y", "SVG")  # parts these pages never load (the SVG folder holds fonts only)


def mathjax_source():
    """The folder of MathJax's static files inside the installed ``jupyter_server_mathjax`` package;
    raises ``ModuleNotFoundError`` saying what to install when it is absent."""
    from pathlib import Path
    try:
        import jupyter_server_mathjax
    except ModuleNotFoundError as exc:
        from integrators._install import install_command
        raise ModuleNotFoundError("the pages' mathematics needs MathJax from the package jupyter-server-mathjax "
                                  f"({install_command('tour')})") from exc
    return Path(jupyter_server_mathjax.__file__).parent / "static"


def copy_mathjax(dest) -> None:
    """Copy MathJax (what the pages load of it) into the folder ``dest``; the pages refer to
    ``<dest>/MathJax.js``."""
    import shutil
    from pathlib import Path

    from integrators._files import write_atomic
    dest = Path(dest)
    if (dest / "MathJax.js").exists():
        return

    def replace(src, dst):  # a file already there (a hard link to one elsewhere) is replaced, not written through
        write_atomic(dst, Path(src).read_bytes(), sync=False)

    shutil.copytree(mathjax_source(), dest, dirs_exist_ok=True, copy_function=replace,
                    ignore=lambda folder, names: [n for n in names if n in MATHJAX_SKIP
                                                  or (Path(folder).name == "localization" and n != "en")])


def mathjax_head(url: str) -> str:
    """The ``<script>`` tags that configure MathJax and load it from ``url`` (``.../MathJax.js``,
    relative to the page) with the package's combined configuration."""
    return f"<script>\n{MATHJAX_CONFIG}\n</script>\n<script src='{url}?config={MATHJAX_COMBINED}'></script>"
