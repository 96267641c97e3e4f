"""Other libraries' samplers behind one protocol, measured by the toolkit.

* :mod:`~theory_checks.adapters._protocol`: what an adapter declares and does
  (:class:`SamplerAdapter`, :func:`check_adapter`, :func:`checked_positions`, :class:`AdapterProblem`;
  a method that raises is :class:`AdapterFailed`, naming the adapter and the method);
* :mod:`~theory_checks.adapters.posteriors_adapter`: posteriors' sgld, sghmc, baoa, sgnht;
* :mod:`~theory_checks.adapters.blackjax_adapter`: BlackJAX's sgld, sghmc, sgnht;
* :mod:`~theory_checks.adapters._measure`: :func:`measure_adapter` (bias of the stationary law
  against an exact Gaussian target, its order and its limit, over every plan) and
  :data:`ADAPTERS`, the registry;
* :mod:`~theory_checks.adapters._planted`: a planted bug the measurement must catch.

A library's adapters are one module of this package that declares ``LIBRARY`` (the library's
name), ``ADAPTERS`` (a tuple of adapter objects) and, optionally, ``ORDER`` (its place in the
registry): every such module is found (:func:`integrators.registry.discover`) and its adapters
join :data:`ADAPTERS`, so adding a library is one new file.  The adapters' methods follow
:class:`SamplerAdapter` and carry a summary line: its docstring is their contract.

The libraries are imported only when an adapter builds a sampler: this package imports without
them.  ``theory_checks.testing.assert_verified(adapter)`` runs the measurement in a test.
"""

from integrators.registry import discover_modules
from theory_checks.adapters._measure import ADAPTERS, AdapterReport, measure_adapter
from theory_checks.adapters._protocol import (
    AdapterFailed,
    AdapterProblem,
    SamplerAdapter,
    check_adapter,
    checked_positions,
)
from theory_checks.adapters._runs import LEVELS

ADAPTER_MODULE = ("LIBRARY", "ADAPTERS")  # what a module of this package declares to be a library's adapters
for _module in discover_modules(__name__, ADAPTER_MODULE):
    for _adapter in _module.ADAPTERS:
        ADAPTERS.register(_adapter)

__all__ = ["ADAPTERS", "LEVELS", "AdapterFailed", "AdapterProblem", "AdapterReport", "SamplerAdapter", "check_adapter",
           "checked_positions", "measure_adapter"]
