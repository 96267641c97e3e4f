"""The experiment contract's output: what a figure module's ``draw`` returns, and its one writer.

An experiment returns data and writes no files.  Its ``draw(results, preset)`` gives a
:class:`Drawing` (matplotlib figures, tables as rows of dicts, texts such as a Markdown table, and
one paragraph of measured numbers); :func:`write_drawing` alone turns it into files, beside the
figure's ``metadata.json`` that the command line writes with :func:`write_metadata`.  Every file goes
through a temporary file and a rename (:func:`integrators._files.write_atomic`): one that is a hard link to a
file elsewhere (``sms-langevin claims --out`` writes into a folder the user chose) is replaced, never
written through.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from integrators._files import write_atomic
from integrators._validation import DictOf, ListOf, Registered, check_parameters, instance_of, optional
from reports._tables import write_rows
from reports.store import json_change

PNG_DPI = 120  # the resolution of each figure's PNG
MAX_FIGURE_PIXELS = 50_000_000  # a canvas of 50 megapixels (200 MB of RGBA): a 2000 x 2000 inch figure is 5.8e10


def _figure(value):
    """``value`` where it is a matplotlib figure (what :func:`write_drawing` saves) of at most
    :data:`MAX_FIGURE_PIXELS` at the resolution it is drawn at (its own dpi or :data:`PNG_DPI`, the larger);
    matplotlib is imported only where a drawing holds figures (their maker imported it already)."""
    from matplotlib.figure import Figure

    if not isinstance(value, Figure):
        raise TypeError(f"{type(value).__name__} is not a matplotlib.figure.Figure")
    (width, height), dpi = value.get_size_inches(), max(value.dpi, PNG_DPI)
    if not width * height * dpi**2 <= MAX_FIGURE_PIXELS:  # (not <=: a NaN size too)
        raise ValueError(f"a figure of {width:g} x {height:g} inches at {dpi:g} dpi is "
                         f"{width * height * dpi**2 / 1e6:.3g} megapixels, more than the "
                         f"{MAX_FIGURE_PIXELS / 1e6:g} a figure may have")
    return value


def _json_facts(value) -> dict:
    """``value`` where it is a dict of string keys whose every value strict JSON keeps unchanged (what
    ``metadata.json`` can hold), else ``ValueError`` naming the first key that breaks it."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{type(value).__name__} is not a dict")
    for key, entry in value.items():
        change = "not a string" if not isinstance(key, str) else json_change(entry)
        if change:
            raise ValueError(f"key {repr(key)[:80]}: {change}")
    return dict(value)


_TEXT = instance_of(str, "a string")


@dataclass
class Drawing:
    """A figure or table of the report, drawn from its units' results.

    Parameters
    ----------
    measured : str
        The numbers the figure shows, in one paragraph (the report prints it under the claim).
    figures : dict of str to matplotlib.figure.Figure
        ``{stem: figure}``; each is written as ``stem.png`` and ``stem.pdf``.
    tables : dict of str to list of dict
        ``{stem: rows}``; each is written as ``stem.csv`` (columns in first-seen order, or as ``columns`` gives
        them); a table with no rows is written as its header where ``columns`` gives it, else left out (a
        CSV without a header says nothing).
    texts : dict of str to str
        ``{file name: text}``, e.g. a Markdown table, written as they are.
    table : str or None
        The name of the text in ``texts`` that the report shows inline (a Markdown table).
    metadata : dict
        Figure-specific facts merged into the figure's ``metadata.json`` (e.g. its histogram): string keys,
        values strict JSON keeps unchanged (no NaN, no tuple, no object JSON cannot hold).
    columns : dict of str to list of str
        ``{stem: column names}``: the header of a table of ``tables``, in order; a table that may have no
        rows gives it, so that its CSV is there, its header alone.

    Attributes
    ----------
    CONSTRAINTS : dict
        The declared constraint of each field (:mod:`integrators._validation`), checked when it is made.

    Raises
    ------
    ValueError
        When a field breaks its constraint (naming it and the entry), ``table`` names no text of
        ``texts``, or ``columns`` names no table of ``tables``.
    """

    measured: str
    figures: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict)
    table: str | None = None
    metadata: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)

    CONSTRAINTS = {
        "measured": _TEXT,
        "figures": DictOf(Registered(
            _figure, f"a matplotlib figure of {MAX_FIGURE_PIXELS / 1e6:g} megapixels or less")),
        "tables": DictOf(ListOf(instance_of(Mapping, "a dict (one row)"))),
        "texts": DictOf(_TEXT),
        "table": optional(_TEXT),
        "metadata": Registered(_json_facts, "a dict of string keys whose values JSON keeps unchanged"),
        "columns": DictOf(ListOf(_TEXT, min_len=1, unique=True)),
    }
    VALID_EXAMPLE = {"measured": "3 units."}

    def __post_init__(self):
        values = check_parameters({f.name: getattr(self, f.name) for f in fields(self)}, self.CONSTRAINTS)
        for name, value in values.items():
            setattr(self, name, value)
        if self.table is not None and self.table not in self.texts:
            raise ValueError(f"table {self.table!r} names no text of this drawing ({', '.join(self.texts) or 'none'})")
        unknown = next((stem for stem in self.columns if stem not in self.tables), None)
        if unknown is not None:
            raise ValueError(f"columns names {unknown!r}, no table of this drawing "
                             f"({', '.join(self.tables) or 'none'})")


RESERVED = "metadata.json"  # the figure's metadata, written beside the drawing by the command line


def _file_names(drawing: Drawing) -> list[str]:
    """The names :func:`write_drawing` writes, each checked to be a plain file name (a string, no folder
    separator, not ``.`` or ``..``, not empty), written once (a text ``t.csv`` beside a table ``t`` would
    replace it) and not :data:`RESERVED`: ``ValueError`` naming the first that is not, so no name a ``draw``
    returns can place a file outside the figure's folder or replace another file of it."""
    names = []
    for part, suffixes, keys in (("figures", (".png", ".pdf"), drawing.figures), ("tables", (".csv",), drawing.tables),
                                 ("texts", ("",), drawing.texts)):
        for key in keys:
            plain = isinstance(key, str) and key not in ("", ".", "..") and not any(c in key for c in ("/", "\\", "\0"))
            if not plain:
                raise ValueError(f"the drawing's {part} name {str(key)[:100]!r} is not a plain file name (no folder "
                                 f"separator, not . or ..): its files are written in the figure's folder only")
            for name in (f"{key}{suffix}" for suffix in suffixes):
                if name in names or name == RESERVED:
                    why = "the figure's metadata" if name == RESERVED else "another file of this drawing"
                    raise ValueError(f"the drawing's {part} name {key!r} writes {name}, the name of {why}: "
                                     f"each file of a drawing needs a name of its own")
                names.append(name)
    return names


def write_drawing(drawing: Drawing, out_dir: Path) -> list[str]:
    """Write every figure, table and text of ``drawing`` into ``out_dir``.

    Parameters
    ----------
    drawing : Drawing
        What a figure module's ``draw`` returned.
    out_dir : pathlib.Path
        The figure's folder (created if absent).

    Returns
    -------
    list of str
        The written file names, figures first (PNG then PDF), then tables and texts.

    Raises
    ------
    ValueError
        When a name in ``figures``, ``tables`` or ``texts`` is not a plain file name (``../x``, ``/abs``),
        names a file another name writes too, or ``metadata.json``, naming it; nothing is written then.  When a
        figure's canvas cannot be allocated (MemoryError), naming it.
    """
    import matplotlib.pyplot as plt

    _file_names(drawing)  # every name checked before the first file is written
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for stem, fig in drawing.figures.items():
        for suffix, options in (("png", {"dpi": PNG_DPI}), ("pdf", {})):
            buffer = io.BytesIO()
            try:
                fig.savefig(buffer, format=suffix, bbox_inches="tight", **options)
            except MemoryError:  # a figure resized after its Drawing was checked: the canvas cannot be allocated
                raise ValueError(f"figure {stem!r} is too large to draw as {suffix.upper()} (MemoryError)") from None
            write_atomic(out_dir / f"{stem}.{suffix}", buffer.getvalue())
        plt.close(fig)
        files += [f"{stem}.png", f"{stem}.pdf"]
    for stem, rows in drawing.tables.items():
        if not rows and stem not in drawing.columns:  # no header to write: a figure whose units all lack data
            continue
        write_rows(out_dir / f"{stem}.csv", rows, drawing.columns.get(stem))
        files.append(f"{stem}.csv")
    for name, text in drawing.texts.items():
        write_atomic(out_dir / name, text if text.endswith("\n") else text + "\n")
        files.append(name)
    return files


def write_metadata(path: Path, meta: dict) -> Path:
    """Write a run's or a figure's metadata (from :func:`reports._metadata.metadata`) as strict JSON (no NaN
    or infinity, which JSON readers other than Python's refuse).

    Parameters
    ----------
    path : pathlib.Path
        Where to write, conventionally ``metadata.json`` beside the outputs it describes.
    meta : dict
        JSON-serializable metadata.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        When ``meta`` holds a NaN, an infinity or an object JSON cannot hold, naming ``path``; nothing is written
        then.
    """
    try:
        text = json.dumps(meta, indent=2, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as exc:  # NaN; an object; too deep (a dict changed after check)
        raise ValueError(f"{path}: the metadata hold a value JSON cannot hold ({exc.__class__.__name__}: "
                         f"{str(exc)[:200]})") from None
    return write_atomic(Path(path), text + "\n")
