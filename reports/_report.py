"""The report: ``index.md`` and ``index.html`` (opens from disk, no server) with every figure
(PNG, and PDF linked), its caption (what the paper claims, what was measured), links to the CSVs,
the claims table and the run metadata.

The HTML carries a small script that, once the page has loaded, records on ``<body>`` how many
images loaded (``data-images-ok`` / ``data-images-total``): the headless-browser test reads it.

A report is replaced whole: it is drawn into a staging folder beside it (:func:`staging_folder`)
and swapped in once every file is written (:func:`swap_in`), so a failure part-way (a full disk)
leaves the previous report, or none, never a half-written file.  A ``report`` (or its ``tour``) that
is a symbolic link is refused by name (``reports.store.UnsafePath``), never moved or followed, and
what a killed swap left is removed without following links.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import shutil
import stat
from pathlib import Path

from integrators._files import open_regular, write_atomic
from reports._metadata import code_metadata
from reports._run_record import run_json
from reports.drawing import write_metadata
from reports.store import UnsafePath, own_path
from theory_checks._checks import markdown_row
from tour._page_style import CHECK_SCRIPT, STYLE

STAGING_PREFIX = ".report-tmp-"  # a report being drawn (removed if the drawing fails or is killed)
OLD_PREFIX = ".report-old-"  # the previous report during a swap
KEPT = ("tour",)  # parts of a report other commands write (`sms-langevin tour`): carried into the next one
METADATA_ANCHOR = "metadata"  # the run metadata's section; both names are registry.RESERVED_IDS


def remove_stale_staging(out: Path) -> int:
    """Delete what a killed report build left in ``out`` (a swap killed between its renames gets its previous
    report back); returns how many folders were removed.  Call it holding ``out``'s lock."""
    report = own_path(out, out / "report")
    olds = sorted(out.glob(f"{OLD_PREFIX}*"), key=lambda p: p.lstat().st_mtime)
    if olds and not report.exists() and not report.is_symlink() and stat.S_ISDIR(olds[-1].lstat().st_mode):
        os.rename(olds.pop(), report)  # a real folder only: never a link, fifo or file planted under that name
    stale = list(out.glob(f"{STAGING_PREFIX}*")) + olds
    for path in stale:
        _remove(path)
    return len(stale)


def _remove(path: Path) -> None:
    """Delete a folder of ours, or whatever was planted in its place (a link: the link only, never its
    target; a fifo, socket or file: unlinked without being opened, which for a fifo would hang)."""
    try:
        is_dir = stat.S_ISDIR(path.lstat().st_mode)
    except FileNotFoundError:
        return
    if is_dir:
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)  # no space needed, and the previous report's files stay untouched
    except OSError:
        shutil.copy2(src, dst)


def staging_folder(out: Path) -> Path:
    """A new empty folder beside ``out/report`` (``out`` created if absent) to draw the next report into,
    holding the parts of the previous report other commands wrote (:data:`KEPT`)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        own_path(out, out / "report" / name)
    staging = out / f"{STAGING_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        for name in KEPT:
            if (out / "report" / name).is_dir():
                shutil.copytree(out / "report" / name, staging / name, symlinks=True, copy_function=_link_or_copy)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


REPORT_TITLE = "<title>SMS-Langevin report</title>"  # what every index.html of a report carries


def check_replaceable(report: Path) -> None:
    """Refuse to replace ``report`` unless it is absent, empty or a report sms-langevin wrote (its ``index.html``
    carries :data:`REPORT_TITLE`): a ``report/`` folder of the user's own files under ``--out`` is never deleted."""
    own_path(report.parent, report)
    if report.exists() and not report.is_dir():  # a user's file of that name: never moved aside and deleted
        raise UnsafePath(f"{report} is a file, not the report's folder sms-langevin draws into: it would be "
                         f"replaced; move it away or choose another --out")
    if not report.is_dir() or not any(report.iterdir()):
        return
    try:
        with open_regular(report / "index.html") as fh:
            ours = REPORT_TITLE.encode() in fh.read(4096)
    except OSError:
        ours = False
    if not ours:
        raise UnsafePath(f"{report} exists and is not a report sms-langevin wrote (no index.html of one): it would "
                         f"be replaced; move it away or choose another --out")


def swap_in(staging: Path, report: Path) -> None:
    """Make the finished ``staging`` folder the report ``report`` (the previous one, which must be a report
    (:func:`check_replaceable`), moved aside, then deleted)."""
    check_replaceable(report)
    old = None
    if report.exists():
        old = report.with_name(f"{OLD_PREFIX}{os.getpid()}-{secrets.token_hex(4)}")
        os.rename(report, old)
    try:
        os.rename(staging, report)
    except BaseException:
        if old is not None:
            os.rename(old, report)
        raise
    if old is not None:
        _remove(old)


def _md_table_to_html(md: str) -> str:
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    if len(lines) < 2:
        return ""
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for r in rows:
        verdict = r[-1] if r else ""
        cls = "fails" if verdict in ("fails", "does not hold") else ("holds" if verdict.startswith("holds") else "")
        out.append(f"<tr class='{cls}'>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _run_record(report_dir: Path, drawn: dict) -> dict:
    """The run's preset, seed, ids and backend as ``run.json`` beside the report records them (the
    command line writes it before drawing), else what the units' metadata say."""
    try:
        record = run_json(report_dir.parent)
    except ValueError:
        record = {}
    seed = next((d["meta"].get("run_seed") for d in drawn.values() if d["meta"]), None)
    ids, backend = record.get("ids"), record.get("backend")
    return {"seed": record.get("seed", seed), "ids": ids if isinstance(ids, list) else None,
            "backend": backend if isinstance(backend, dict) else {}}


def _regenerate(preset: str, run: dict, drawn: dict) -> str:
    """The command that recomputes this report (the folder holding it in place of OUT): the figures it draws, with
    the run's backend flags only where one of them offers backends (``run`` refuses them otherwise)."""
    from reports import registry
    from reports._cli_common import backend_flags
    # a figure the run recorded but this registry no longer has is not in the report
    ids = [fid for fid in run["ids"] or () if fid in drawn] or list(drawn)
    try:
        everything = list(registry.load()) == list(ids)
    except Exception:  # a registry that no longer imports: name the ids
        everything = False
    what = "all" if everything else " ".join(ids)
    seed = f" --seed {run['seed']}" if run["seed"] is not None else ""
    offered = any(drawn[fid]["module"].BACKENDS for fid in ids)
    flags = backend_flags(run["backend"]) if offered else ""
    return f"sms-langevin run {what} --preset {preset}{seed}{flags} --out OUT"


def section_preset(mod, preset: str) -> str:
    """The preset a section ran, in words: ``preset``, plus the module's own level where it differs, e.g.
    ``"tiny (runs this section's quick level)"`` (``reports.registry.module_preset``)."""
    from reports.registry import module_preset
    level = module_preset(mod, preset)
    return preset if level == preset else f"{preset} (runs this section's {level} level)"


def _table_body(table_md: str) -> str:
    """A table's Markdown without its own top-level title (the section's heading stands for it)."""
    lines = table_md.splitlines()
    while lines and (lines[0].startswith("# ") or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines)


CLAIMS_ID = "claims"  # the section that also tabulates every figure's verdict


def _css(verdict) -> str:
    from reports.verdict import DOES_NOT_HOLD, HOLDS
    return {HOLDS: "holds", DOES_NOT_HOLD: "fails"}.get(verdict.outcome, "untested")


def figure_verdicts_markdown(drawn: dict, verdicts: dict) -> str:
    """One row per figure of ``drawn``: its claim's verdict (``verdicts``, ``{id: Verdict}``), reason and numbers."""
    lines = ["| figure | reason | numbers | verdict |", "|---|---|---|---|"]
    for fid, v in verdicts.items():
        cells = [drawn[fid]["module"].TITLE, v.reason, v.numbers or "-", v.outcome]
        lines.append(markdown_row(cells))
    return "\n".join(lines)


def write_report(report_dir: Path, drawn: dict, preset: str, left_out: dict | None = None) -> None:
    """Write ``index.md``, ``index.html`` and ``metadata.json`` into ``report_dir``: introduction, contents, one
    section per figure of ``drawn`` (``{id: {"module", "info", "meta", "wall"}}``, in report order; files
    already in ``report_dir/<id>``), and the figures asked for but ``left_out`` of the run (``{id: why}``)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    left_out = left_out or {}
    any_meta = next((d["meta"] for d in drawn.values() if d["meta"]), {})
    # the code that computed the units, as each figure records it (the code drawing them where none is drawn)
    meta = {k: any_meta.get(k, "not recorded") if any_meta else v for k, v in code_metadata().items()}
    meta["run_seed"] = any_meta.get("run_seed")
    meta["preset"] = preset
    meta["compute_seconds"] = {fid: round(d["wall"], 1) for fid, d in drawn.items()}
    meta["left_out"] = dict(left_out)
    run = _run_record(report_dir, drawn)
    toured = (report_dir / "tour" / "index.html").exists()  # written by `sms-langevin tour`
    command = _regenerate(preset, run, drawn)
    seed = "" if run["seed"] is None else f", run seed {run['seed']}"
    smaller = {fid for fid, d in drawn.items() if section_preset(d["module"], preset) != preset}
    intro = (f"This report reruns the experiments of the SMS-Langevin toolkit (the paper's claims on symmetric "
             f"minibatch splitting for kinetic Langevin samplers) at the preset {preset}{seed}. Each section is "
             "one figure or table: its verdict on the paper's claim (holds, does not hold, or not testable at this "
             "preset, with the reason and the numbers), the claim, what this run measured, and its data files (CSV, "
             "PDF, metadata.json). A preset smaller than full runs smaller problems with fewer samples: read each "
             "measurement with its section's preset"
             + (f"; sections without a {preset} level of their own run their quick level, as each says" if smaller
                else "") + ".")
    regen = (f"Regenerate it with `{command}` (OUT: the folder holding this report), or redraw it from the "
             "saved results with `sms-langevin report --out OUT`.")
    verdicts = {fid: d["info"]["verdict"] for fid, d in drawn.items()}
    contents = [(fid, f"{d['module'].TITLE} ({verdicts[fid].outcome})") for fid, d in drawn.items()]
    if toured:
        contents.append(("tour", "Guided tour"))
    if left_out:
        contents.append(("left-out", f"Not in this report: {', '.join(left_out)}"))
    contents.append((METADATA_ANCHOR, "Run metadata"))
    md = [f"# SMS-Langevin report (preset `{preset}`)", "", intro, "", regen, "", "Contents:", ""]
    md += [f"- [{title}](#{anchor})" for anchor, title in contents] + [""]
    body = [f"<h1>SMS-Langevin report (preset <code>{html.escape(preset)}</code>)</h1>",
            f"<p class='intro'>{html.escape(intro)}</p>",
            f"<p>Regenerate it with <code>{html.escape(command)}</code> (OUT: the folder holding this report), or "
            "redraw it from the saved results with <code>sms-langevin report --out OUT</code>.</p>",
            "<nav><b>Contents</b><ol>" + "".join(f"<li><a href='#{anchor}'>{html.escape(title)}</a></li>"
                                                  for anchor, title in contents) + "</ol></nav>"]
    for fid, d in drawn.items():
        mod, info = d["module"], d["info"]
        ran = section_preset(mod, preset)
        verdict = verdicts[fid]
        md += [f"<a id='{fid}'></a>", "", f"## {mod.TITLE}", "", f"**Verdict: {verdict.text()}**", "",
               f"Preset: {ran}.", ""]
        if info.get("note"):  # what the numbers below rest on, said before them (the command line's note)
            md += [f"Note: {info['note']}.", ""]
        body.append(f"<h2 id='{fid}'>{html.escape(mod.TITLE)}</h2>")
        body.append(f"<p class='verdict {_css(verdict)}'><b>Verdict: {html.escape(verdict.outcome)}</b>: "
                    f"{html.escape(verdict.text().split(': ', 1)[1])}</p>")
        body.append(f"<p class='preset'>Preset: {html.escape(ran)}.</p>")
        if info.get("note"):
            body.append(f"<p class='note'>Note: {html.escape(info['note'])}.</p>")
        pngs = [f for f in info["files"] if f.endswith(".png")]
        others = [f for f in info["files"] if not f.endswith(".png")]
        for png in pngs:  # a figure of several panels files: each image says which it is
            alt = mod.TITLE if len(pngs) == 1 else f"{mod.TITLE}: {Path(png).stem.replace('_', ' ')}"
            md.append(f"![{alt}]({fid}/{png})")
            body.append(f"<figure><img src='{fid}/{png}' alt='{html.escape(alt)}'>")
        caption = f"Claim: {mod.CLAIM} Measured: {info['measured']}"
        md += ["", caption, ""]
        links = " · ".join(f"[{f}]({fid}/{f})" for f in others)
        md += [f"Files: {links}", ""]
        html_links = " · ".join(f"<a href='{fid}/{f}'>{html.escape(f)}</a>" for f in others)
        cap = (f"<figcaption><b>Claim:</b> {html.escape(mod.CLAIM)}<br><b>Measured:</b> "
               f"{html.escape(info['measured'])}<br>Files: {html_links}</figcaption>")
        body.append(cap + ("</figure>" if pngs else ""))
        if "table" in info:
            table_md = (report_dir / fid / info["table"]).read_text()
            md += [_table_body(table_md), ""]
            body.append(_md_table_to_html(table_md))
        if fid == CLAIMS_ID:  # the figures' verdicts beside the claims table: the objects the sections print
            table_md = figure_verdicts_markdown(drawn, verdicts)
            md += ["The figures' verdicts (each figure's section opens with its own):", "", table_md, ""]
            body.append("<p>The figures' verdicts (each figure's section opens with its own):</p>"
                        + _md_table_to_html(table_md))
    if toured:
        md += ["<a id='tour'></a>", "", "## Guided tour", "", "[Notebooks with exercises, executed](tour/index.html)",
               ""]
        body.append("<h2 id='tour'>Guided tour</h2><p><a href='tour/index.html'>Notebooks with exercises, "
                    "executed</a>: kinetic Langevin, stochastic gradients, bias, strong order, Figure 1, a Bayesian "
                    "neural network, verifying your own sampler.</p>")
    if left_out:
        why = [f"{fid}: {reason}" for fid, reason in left_out.items()]
        md += ["<a id='left-out'></a>", "", "## Not in this report", "",
               "Asked for, but not run here, and why:", "", *(f"- {w}" for w in why), ""]
        body += ["<h2 id='left-out'>Not in this report</h2><p>Asked for, but not run here, and why:</p><ul>"
                 + "".join(f"<li>{html.escape(w)}</li>" for w in why) + "</ul>"]
    meta_text = json.dumps(meta, indent=2)
    md += [f"<a id='{METADATA_ANCHOR}'></a>", "", "## Run metadata", "", "```json", meta_text, "```", ""]
    body += [f"<h2 id='{METADATA_ANCHOR}'>Run metadata</h2>", f"<pre>{html.escape(meta_text)}</pre>"]
    write_atomic(report_dir / "index.md", "\n".join(md))
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'>{REPORT_TITLE}"
            f"{STYLE}</head><body>\n" + "\n".join(body) + f"\n{CHECK_SCRIPT}\n</body></html>\n")
    write_atomic(report_dir / "index.html", page)
    write_metadata(report_dir / "metadata.json", meta)
