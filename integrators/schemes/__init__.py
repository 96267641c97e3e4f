"""The schemes, one file each.  A scheme is a :class:`Scheme` declaring ``NAME``, ``WEAK_ORDER``, ``STRONG_ORDER``
(for full gradients), ``FSAL`` (whether its one force is evaluated at the end of the step with
the next step's batch), ``coefficients(h, gamma)``, a Numba ``step`` and, optionally,
``affine_ops(h, gamma)`` (the step as operations, interpreted by the exact oracle in
``theory_checks.oracle``; without it the oracle reads the step's affine map off the compiled
``step`` itself by probing, see ``theory_checks._probe``).  First-same-as-last schemes write
``affine_ops`` in a rotated form and declare ``rotation_ops(h, gamma)``: the operations taking
the state after a step to the rotated state (with the noise they undo, in the step's own path
slots, when the rotation crosses an O step).

``step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)`` advances a block of ``n``
chains in place by one step of size ``h``: ``x, v, g`` have shape ``(n, d)``, ``dW`` and ``J``
shape ``(2, d, n)`` (the path pair over each half step, chains innermost), ``batch`` shape ``(k, n)`` (chain ``c``'s
batch in ``batch[:n_batch, c]``).  Loops run over coordinates outside and chains inside,
so the arithmetic vectorizes over chains.  A scheme never knows the plan, the target or the backend.
``force(x, g, batch, n_batch, scale, tdata)`` writes the stochastic force at ``x`` into ``g``
(``scale``: the plan's ``force_scale`` for that batch; ``tdata``: the target's data, as ``force``
reads it); ``box`` is ``(center, half_width, active)``, the reflecting box of the positions,
inactive when ``active[0]`` is false (:func:`integrators.reflect`).  The member modules' functions carry
a summary line: this docstring is their contract.

``coefficients(h, gamma)`` returns a 1-D float64 array of finite numbers, the same length at every
``(h, gamma)``, and ``step`` reads no element past its end; :func:`check_coefficients` checks the
first where a :class:`Scheme` is built, and both where a scheme is registered or a scheme object is
first used (:func:`resolve_scheme`: ``sample``, ``verify``, the oracle), once per scheme object.

``UPDATE`` is the same step written once for every array type: a tuple of pure *moves*
``move(x, v, g, c0, c1, c2, c3, c4, dW1, J1, dW2, J2) -> (x, v)`` (the coefficients in the
first :data:`N_MOVE_COEF` slots, zeros after them; ``dW1, J1`` and ``dW2, J2`` the path pair of
each half step) and the markers :data:`FORCE` (the step's one force, ``g <- G(x)``) and
:data:`REFLECT` (the bounce, where the Numba step calls ``reflect``).  A move uses only ``+``,
``-`` and ``*``, so the same function runs on numpy arrays (:func:`update_reference`, the tests'
reference), on tensors (:func:`integrators.torch.schemes.tensor_step`) and on Triton blocks (the
fused kernel, :mod:`integrators.torch._fused`); the Numba ``step`` is the fast loop, held to it
by the tests.  The built-in moves update ``x`` and ``v`` by augmented assignment (``x += ...``,
``v *= ...``): in place on arrays and tensors, where a new array would cost a pass over the state
to copy back, and a new value on Triton blocks; a move may as well return new arrays.

A built-in scheme is a module of this package that ends with ``SCHEME = Scheme(NAME=..., WEAK_ORDER=...,
STRONG_ORDER=..., FSAL=..., coefficients=coefficients, step=step, UPDATE=..., ...)`` and
``__all__ = ["SCHEME"]`` (found by :func:`integrators.registry.discover`: a new file is a new scheme,
on every backend; :data:`SCHEMES` holds that object), with its update rule in the module docstring
and its ``ORDER`` (an integer literal at module level: its place in tables and figures).

``SCHEMES`` is the registry that the kernel, the oracle, the coupled chains, the claims table,
the weak-orders figure and the tests read.  A scheme in user code (a :class:`Scheme` built from a
Numba step, or any object with its attributes) joins it with :func:`register_scheme`; nothing else
changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from integrators.registry import Registry, discover_modules

SCHEME_ATTRIBUTES = ("NAME", "WEAK_ORDER", "STRONG_ORDER", "FSAL", "coefficients", "step")
FORCE = "force"      # in an UPDATE: the step's one force, g <- G(x)
REFLECT = "reflect"  # in an UPDATE: the bounce (a no-op without a box)
N_MOVE_COEF = 5      # coefficient slots of a move (the fused kernel's registers)


@dataclass(frozen=True, eq=False)
class Scheme:
    """A scheme: its declared constants and functions (see the package docstring for the contract).

    Every built-in scheme module of this package declares one (``SCHEME``); one built in user code
    joins the registry with :func:`register_scheme`.  ``affine_ops`` and ``rotation_ops`` are
    optional (the oracle probes the compiled step when they are absent).  A scheme written only in
    torch gives ``step=None`` and its ``TORCH_STEP``: the torch backend runs it, the oracle and
    ``verify`` probe its tensor step, and the Numba backend refuses it by name.  Its coefficients
    are checked when it is made (a non-empty 1-D float64 array of finite numbers, of one length at
    every ``(h, gamma)``); :func:`register_scheme` adds it to :data:`SCHEMES`.

    Parameters
    ----------
    NAME : str
        The scheme's name in the registry, tables and figures.
    step : numba function or None
        ``step(x, v, g, coef, dW, J, force, batch, n_batch, scale, tdata, box)``: one step of size
        ``h`` of a block of chains in place (see the module docstring for the shapes), or
        ``None`` for a scheme written only in torch.
    coefficients : callable
        ``coefficients(h, gamma)``: the 1-D float64 array the step receives as ``coef``.
    WEAK_ORDER, STRONG_ORDER : float
        The scheme's expected weak and strong orders for full gradients, positive.
    FSAL : bool, default False
        Whether its one force is evaluated at the end of the step with the next step's batch
        (first-same-as-last).
    affine_ops : callable or None, default None
        ``affine_ops(h, gamma)``: the step as operations, interpreted by the exact oracle.
    rotation_ops : callable or None, default None
        ``rotation_ops(h, gamma)``: for a first-same-as-last scheme, the operations taking the
        state after a step to the rotated state of its ``affine_ops``.
    TORCH_STEP : callable or None, default None
        The same update on tensors (the contract of :mod:`integrators.torch.schemes`), with
        which the scheme runs on the torch backend too.
    reference_step : callable or None, default None
        ``reference_step(x, v, g, h, gamma, dW, J, grad)``: the same step for one chain in plain
        numpy (``dW, J`` of shape ``(2, d)``, ``grad(x)`` the force; returns ``(x, v, g)``), which
        the tests hold ``step`` to; by default :func:`update_reference` of ``UPDATE``.
    UPDATE : tuple or None, default None
        The step as pure moves and the markers :data:`FORCE` and :data:`REFLECT` (see the
        package docstring): one function per part of the step, which the numpy reference, the
        tensor step and the fused kernel all call; every built-in scheme gives one.
    EXACT_GAUSSIAN_X : bool, default False
        Whether, with full gradients, its x-marginal is exact on Gaussian targets at every stable
        step size (BAOAB): ``verify`` then expects no bias rather than its weak order.

    Raises
    ------
    ValueError
        If ``coefficients`` is not callable, raises, or does not return a non-empty 1-D float64
        array of finite numbers of one length at every ``(h, gamma)``.
    """

    NAME: str
    step: object
    coefficients: object
    WEAK_ORDER: float
    STRONG_ORDER: float
    FSAL: bool = False
    affine_ops: object = None
    rotation_ops: object = None
    TORCH_STEP: object = None
    reference_step: object = None
    EXACT_GAUSSIAN_X: bool = False
    UPDATE: tuple | None = None

    def __post_init__(self):
        _CHECKED[id(self)] = (self, self.step, self.coefficients, check_coefficients(self), False)
        if self.UPDATE is not None:
            check_update(self, _CHECKED[id(self)][3])
            if self.reference_step is None:
                object.__setattr__(self, "reference_step", update_reference(self.UPDATE, self.coefficients))


def check_update(scheme, coef: np.ndarray) -> None:
    """Check a scheme's ``UPDATE``: a tuple of callables and the markers, with exactly one
    :data:`FORCE`, for at most :data:`N_MOVE_COEF` coefficients (else ``ValueError`` naming the scheme)."""
    name, update = getattr(scheme, "NAME", "?"), scheme.UPDATE
    if not isinstance(update, tuple) or not all(callable(m) or m in (FORCE, REFLECT) for m in update):
        raise ValueError(f"scheme {name!r}: UPDATE must be a tuple of moves move(x, v, g, c0, ..., c4, dW1, J1, "
                         f"dW2, J2) -> (x, v) and the markers FORCE and REFLECT, got {update!r}"[:400])
    if sum(m == FORCE for m in update if isinstance(m, str)) != 1:
        raise ValueError(f"scheme {name!r}: UPDATE must hold FORCE exactly once (the step's one force)")
    if coef.size > N_MOVE_COEF:
        raise ValueError(f"scheme {name!r}: a move reads at most {N_MOVE_COEF} coefficients, coefficients(h, gamma) "
                         f"returns {coef.size}")


def move_coefficients(coef) -> tuple:
    """A scheme's coefficients as the :data:`N_MOVE_COEF` coefficient slots of a move.

    Parameters
    ----------
    coef : array_like or tensor or tuple
        The coefficients, at most :data:`N_MOVE_COEF`.

    Returns
    -------
    tuple
        Its elements, then zeros up to :data:`N_MOVE_COEF`.
    """
    return (*coef, *(0.0,) * (N_MOVE_COEF - len(coef)))


def update_reference(update: tuple, coefficients):
    """The numpy ``reference_step(x, v, g, h, gamma, dW, J, grad)`` of one chain that ``update`` describes
    (no box: :data:`REFLECT` is skipped).

    Parameters
    ----------
    update : tuple
        A scheme's ``UPDATE``.
    coefficients : callable
        Its ``coefficients(h, gamma)``.

    Returns
    -------
    callable
        ``reference_step(x, v, g, h, gamma, dW, J, grad) -> (x, v, g)`` with ``dW, J`` of shape ``(2, d)``.
    """
    def reference_step(x, v, g, h, gamma, dW, J, grad):
        c = move_coefficients(coefficients(h, gamma))
        x, v = np.array(x, dtype=float), np.array(v, dtype=float)  # moves may update in place: the caller's stay
        for move in update:
            if isinstance(move, str):
                if move == FORCE:
                    g = grad(x)
                continue
            x, v = move(x, v, g, *c, dW[0], J[0], dW[1], J[1])
        return x, v, g

    return reference_step


# (h, gamma) at which a scheme's coefficients are checked: moderate steps and frictions
REPRESENTATIVE_STEPS = ((0.1, 1.0), (0.01, 10.0), (0.25, 0.1))
PAD = 8  # elements after a scheme's coefficients in the read check (NaN: they must not reach the state)


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    return f"{type(value).__name__} {value!r}"[:200]


def check_coefficients(scheme) -> np.ndarray:
    """Check ``scheme.coefficients(h, gamma)`` at :data:`REPRESENTATIVE_STEPS` and return those at the first.

    Each must be a non-empty 1-D float64 numpy array of finite numbers, of one length at every
    ``(h, gamma)``; otherwise (or if ``coefficients`` is not callable or raises) ``ValueError`` names
    the scheme and its coefficients."""
    name = getattr(scheme, "NAME", "?")
    function = scheme.coefficients
    if not callable(function):
        raise ValueError(f"scheme {name!r}: coefficients must be a function coefficients(h, gamma) returning a "
                         f"1-D float64 array, got {_describe(function)}")
    first = None
    for h, gamma in REPRESENTATIVE_STEPS:
        call = f"scheme {name!r}: coefficients(h={h:g}, gamma={gamma:g})"
        try:
            coef = function(h, gamma)
        except Exception as exc:
            raise ValueError(f"{call} raised {type(exc).__name__}: {exc}") from exc
        if not (isinstance(coef, np.ndarray) and coef.dtype == np.float64 and coef.ndim == 1 and coef.size):
            raise ValueError(f"{call} must return a non-empty 1-D float64 array (np.array([...], dtype=float)), "
                             f"got {_describe(coef)}")
        if not np.all(np.isfinite(coef)):
            raise ValueError(f"{call} returned non-finite coefficients {coef!r}")
        if first is not None and coef.size != first.size:
            raise ValueError(f"{call} returned {coef.size} coefficients, but {first.size} at "
                             f"h={REPRESENTATIVE_STEPS[0][0]:g}, gamma={REPRESENTATIVE_STEPS[0][1]:g}: the step "
                             f"reads one fixed layout")
        first = coef if first is None else first
    return first


def run_coefficients(scheme, h: float, gamma: float) -> np.ndarray:
    """``scheme.coefficients(h, gamma)`` for a run, checked at the run's ``(h, gamma)``.

    Registration checks them at :data:`REPRESENTATIVE_STEPS` only; a shorter array or a NaN at the
    run's step alone would run as chains that do not move, or diverge.

    Parameters
    ----------
    scheme : Scheme
        The scheme (or an object with its attributes).
    h : float
        The step size.
    gamma : float
        The friction.

    Returns
    -------
    numpy.ndarray
        The coefficients.

    Raises
    ------
    ValueError
        Naming the scheme, ``h`` and ``gamma``, unless they are a 1-D float64 array of finite numbers as
        long as those checked at registration (or if ``coefficients`` raises).
    """
    name = getattr(scheme, "NAME", "?")
    seen = _CHECKED.get(id(scheme))
    if seen is None or seen[0] is not scheme or seen[2] is not scheme.coefficients:
        seen = (scheme, getattr(scheme, "step", None), scheme.coefficients, check_coefficients(scheme), False)
        _CHECKED[id(scheme)] = seen
    size = seen[3].size
    call = f"scheme {name!r}: coefficients(h={h:g}, gamma={gamma:g})"
    try:
        coef = scheme.coefficients(h, gamma)
    except Exception as exc:
        raise ValueError(f"{call} raised {type(exc).__name__}: {exc}") from exc
    if not (isinstance(coef, np.ndarray) and coef.dtype == np.float64 and coef.ndim == 1 and coef.size == size):
        h0, gamma0 = REPRESENTATIVE_STEPS[0]
        raise ValueError(f"{call} must return a 1-D float64 array of {size} coefficients (as at h={h0:g}, "
                         f"gamma={gamma0:g}), got {_describe(coef)}")
    if not np.all(np.isfinite(coef)):
        raise ValueError(f"{call} returned non-finite coefficients {coef!r}")
    return coef


def check_step_reads(scheme, coef: np.ndarray) -> None:
    """Check that the scheme's ``step`` reads no coefficient past the end of ``coef`` (else ``ValueError``).

    One step of a small block on a Gaussian target, with ``coef`` followed by :data:`PAD` ones and
    then by as many NaN: a state that is finite with the ones and not with the NaN read past the end
    (the kernel would read whatever memory follows)."""
    from integrators._bounce import make_box
    from integrators._kernel import step_caller
    from integrators._user_code import guarded
    from integrators._validation import one_line
    from integrators.targets import GaussianTarget
    from integrators.targets._force import force_data, lane_force_for

    if not hasattr(scheme.step, "py_func"):  # typing it in the kernel would fail with Numba's words
        raise ValueError(f"scheme {scheme.NAME!r}: its step failed its check: it must be a Numba function "
                         f"(decorate it with @numba.njit), got {_describe(scheme.step)[:80]}")
    d, n = 2, 4
    target = GaussianTarget(np.zeros((1, d)), np.eye(d)[None], prior_precision=0.5)
    # user code: a write past an array raises
    step = step_caller(guarded(scheme.step, f"scheme {scheme.NAME!r}: step"), lane_force_for(target))
    rng = np.random.default_rng(0)
    state = [rng.normal(size=(n, d)) for _ in range(3)]
    noise = [np.ascontiguousarray(rng.normal(size=(2, d, n))) for _ in range(2)]
    finite = []
    for pad in (1.0, np.nan):
        x, v, g = (np.array(a, order="C") for a in state)
        padded = np.concatenate([coef, np.full(PAD, pad)])
        try:
            step(x, v, g, padded, *noise, np.zeros((1, n), dtype=np.int32), 1, 1.0, force_data(target), make_box(d))
        except Exception as exc:
            raise ValueError(f"scheme {scheme.NAME!r}: its step failed its check, step(x, v, g, coef, dW, J, force, "
                             f"batch, n_batch, scale, tdata, box) on a test block with coefficients(0.1, 1.0): "
                             f"{one_line(exc, limit=400)}") from exc
        finite.append(bool(np.all(np.isfinite(x)) and np.all(np.isfinite(v))))
    if finite == [True, False]:
        raise ValueError(f"scheme {scheme.NAME!r}: its step reads past the end of the {coef.size} coefficients that "
                         f"coefficients(h, gamma) returns (a NaN placed after them reaches the state); return every "
                         f"coefficient the step reads")


# id(scheme) -> (scheme, its step, its coefficients, their value, whether the step's reads were checked)
_CHECKED: dict = {}
# the SCHEME of each module of this package that declares one, in their ORDER; their steps' reads are
# tested (tests/test_scheme_contract.py), not probed
_BUILT_IN = tuple(module.SCHEME for module in discover_modules(__name__, ("SCHEME",)))


def _check_scheme(scheme) -> None:
    for attr in ("WEAK_ORDER", "STRONG_ORDER"):
        value = getattr(scheme, attr)
        # (inf is no order: a table or a convergence check would take any error as within it)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
            raise ValueError(f"scheme {scheme.NAME!r}: {attr} must be a finite positive number, got {value!r}")
    if scheme.step is None and not callable(getattr(scheme, "TORCH_STEP", None)) \
            and getattr(scheme, "UPDATE", None) is None:
        raise ValueError(f"scheme {scheme.NAME!r}: step is None, so it needs a TORCH_STEP or an UPDATE (a scheme "
                         f"for the torch backend only); give a Numba step, a TORCH_STEP or an UPDATE")
    seen = _CHECKED.get(id(scheme))
    if seen is None or seen[0] is not scheme or seen[1] is not scheme.step or seen[2] is not scheme.coefficients:
        seen = (scheme, scheme.step, scheme.coefficients, check_coefficients(scheme), False)
    numba_step = scheme.step is not None
    if not seen[4] and numba_step and not any(scheme is built_in for built_in in _BUILT_IN):  # no compiling at import
        check_step_reads(scheme, seen[3])
    _CHECKED[id(scheme)] = (*seen[:4], True)


SCHEMES = Registry("scheme", SCHEME_ATTRIBUTES, _check_scheme, _BUILT_IN)


def register_scheme(scheme, *, replace: bool = False):
    """Add a scheme to the registry :data:`SCHEMES`.

    The kernel, the oracle, the coupled chains, the claims table, the weak-orders figure and the
    tests read the registry, so nothing else changes.  A scheme with a Numba step (other than the
    built-in ones) is run once on a small block to check that it reads no coefficient past the
    end of its ``coefficients``.

    Parameters
    ----------
    scheme : Scheme
        A :class:`Scheme` (or any object with its attributes).
    replace : bool, default False
        Replace a different scheme already registered under the same name.

    Returns
    -------
    Scheme
        The scheme, as given.

    Raises
    ------
    ValueError
        If the scheme lacks a required attribute, its ``NAME`` is empty, its orders are not
        positive numbers, it has neither a Numba ``step`` nor a ``TORCH_STEP``, its coefficients
        or its step fail their checks, or another scheme has its name and ``replace`` is false.
    """
    return SCHEMES.register(scheme, replace=replace)


def unregister_scheme(name: str) -> None:
    """Remove a scheme from the registry :data:`SCHEMES`.

    Parameters
    ----------
    name : str
        The scheme's ``NAME``.

    Raises
    ------
    ValueError
        If no scheme of that name is registered.
    """
    SCHEMES.unregister(name)


def resolve_scheme(scheme):
    """The scheme for a registered name, or the scheme object itself (validated).

    Parameters
    ----------
    scheme : str or Scheme
        A registered scheme's name or a scheme object.

    Returns
    -------
    Scheme
        The scheme.

    Raises
    ------
    ValueError
        If the name is not registered, or the object lacks a scheme's attributes or fails their checks.
    """
    return SCHEMES.resolve(scheme)


__all__ = ["FORCE", "N_MOVE_COEF", "REFLECT", "SCHEMES", "Scheme", "move_coefficients", "register_scheme",
           "resolve_scheme", "unregister_scheme", "update_reference"]
