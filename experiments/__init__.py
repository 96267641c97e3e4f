"""The experiments: one module (or subpackage) per figure or table of the report.

Each declares one :class:`reports.registry.Experiment` as ``EXPERIMENT`` (its units, ``run_unit`` and
``draw``) beside its computation; the registry finds them here (:func:`integrators.registry.discover`),
with no list to edit.
"""

__all__: list[str] = []  # each figure is a module of this package, found by the registry; nothing to import here
