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
