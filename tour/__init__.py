"""The guided tour of stochastic-gradient kinetic Langevin: notebooks in ``docs/tour/`` (jupytext
percent-format sources, stored without outputs), the exercise checker, and the builder that
executes them and writes HTML pages (``sms-langevin tour --out DIR`` or ``make tour``)."""

from tour._exercises import EXERCISES, check, question
from tour._notebooks import NOTEBOOK_DIR, notebooks

# what building the pages imports (the tour extra of pyproject.toml): the command line says what to
# install where one is absent (reports.registry.lacking)
REQUIRES = ("jupytext", "nbclient", "nbconvert", "nbformat", "ipykernel", "jupyter_server_mathjax")

__all__ = ["EXERCISES", "NOTEBOOK_DIR", "check", "notebooks", "question"]
