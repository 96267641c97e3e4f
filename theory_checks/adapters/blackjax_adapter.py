"""Adapters for the stochastic-gradient samplers of BlackJAX (``blackjax.sgld``, ``sghmc``,
``sgnht``; tested with BlackJAX 1.7.1 on jax's CPU build), imported lazily: building one without
BlackJAX installed raises an ``ImportError`` that says what to install.

BlackJAX takes a *gradient estimator* ``grad_estimator(position, minibatch)``; every adapter
hands it the toolkit's minibatch gradient (:meth:`AdapterProblem.grad_log_density`, the toolkit's
own force) through ``jax.pure_callback``, with the minibatch ``(indices, scale)`` the toolkit
chose.  The scale travels with the batch, so one compiled step serves every plan; it is compiled
once per target, friction and array shapes (a bounded cache).  Arrays have JAX's default
precision (float32 unless ``jax_enable_x64`` is set): rounding of ``1e-7`` relative per step lies
far below the Monte Carlo errors of the measurement.  BlackJAX's noise comes from explicit keys:
``init`` seeds a key, ``step`` splits it.

Parameters map as ``step_size = h``, ``temperature = 1``, ``beta = 0`` and ``alpha = gamma``
(BlackJAX's friction, unit mass).

Not adapted: ``blackjax.csgld`` (contour SGLD).  Its chain samples a flattened density
``pi(x) / Psi(U(x))^zeta`` built from an energy histogram it learns by stochastic approximation
while it runs; averages under ``pi`` need that run's importance weights, so its positions do not
sample the target and the measurement here (the stationary law of the positions against the
target) does not apply to it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from integrators._validation import int_at_least, positive_float
from integrators.targets import GaussianTarget
from theory_checks.adapters._protocol import AdapterProblem, ThermostatAdapter, missing_library

LIBRARY = "blackjax"  # the library this module adapts (found by theory_checks.adapters: LIBRARY and ADAPTERS)
ORDER = 2  # its place in the registry ADAPTERS and the conformance report
VERSION = "1.7.1"  # the release these adapters' rules were read from and measured with


def _blackjax():
    """``(jax, blackjax)``, or the ImportError that says what to install."""
    try:
        import blackjax
        import jax
    except ImportError as exc:
        raise missing_library("BlackJAX", f"blackjax=={VERSION} jax[cpu]") from exc
    return jax, blackjax


def _grad_estimator_for(target):
    """BlackJAX's ``grad_estimator(position, minibatch)`` for the toolkit's ``target``, with
    ``minibatch = (indices, scale)``: the toolkit's minibatch gradient.  For a
    :class:`GaussianTarget` it is written in JAX (``_gaussian_grad_estimator``, no host round
    trip per inner step); otherwise the toolkit's force is called back on the host (under
    ``jax.vmap``, one chain per lane, the callback receives the whole block of chains)."""
    jax, _ = _blackjax()
    if isinstance(target, GaussianTarget):
        return _gaussian_grad_estimator(target)

    def host(x, idx, scale):
        x = np.asarray(x)
        flat = x.reshape(-1, target.dim)
        problem = AdapterProblem(target, float(np.asarray(scale).reshape(-1)[0]))
        return problem.grad_log_density(flat, np.asarray(idx).reshape(flat.shape[0], -1)).astype(x.dtype).reshape(
            x.shape)

    def grad_estimator(position, minibatch):
        idx, scale = minibatch
        return jax.pure_callback(host, jax.ShapeDtypeStruct(position.shape, position.dtype), position, idx, scale,
                                 vmap_method="broadcast_all")

    return grad_estimator


def _gaussian_grad_estimator(target):
    """``-(A_0 (x - m_0) + scale * sum_{i in batch} A_i (x - mu_i))`` in JAX for the Gaussian terms
    ``f_i(x) = (x - mu_i)^T A_i (x - mu_i) / 2`` and the prior ``(x - m_0)^T A_0 (x - m_0) / 2``: the
    toolkit's minibatch force, negated, for positions ``(..., d)`` and indices ``(..., batch)``."""
    import jax.numpy as jnp

    means, precisions, prior, prior_mean = (np.asarray(a, dtype=float) for a in target.arrays)

    def grad_estimator(position, minibatch):
        idx, scale = minibatch
        idx = jnp.reshape(idx, position.shape[:-1] + (-1,))
        diff = position[..., None, :] - jnp.asarray(means)[idx]                       # (..., batch, d)
        terms = jnp.einsum("...bij,...bj->...i", jnp.asarray(precisions)[idx], diff)
        return -((position - jnp.asarray(prior_mean)) @ jnp.asarray(prior).T + scale * terms)

    return grad_estimator


class _Built:
    """What an adapter's ``build`` returns: the compiled functions, ``h`` and the problem's scale."""

    def __init__(self, compiled, problem, h, gamma):
        self.init_fn, self.step_fn = compiled
        self.problem, self.h, self.gamma = problem, h, gamma


class _BlackJAXAdapter:
    LIBRARY = "blackjax"
    CHAINS = "stacked"
    EXACT_GAUSSIAN_X = False
    EQUIVALENT_SCHEME = None

    def _key(self) -> tuple:
        return ()

    def build(self, problem: AdapterProblem, h: float, gamma: float) -> _Built:
        h, gamma = positive_float("h", h), positive_float("gamma", gamma)
        return _Built(_compiled(type(self), problem.target, gamma, *self._key()), problem, h, gamma)

    def init(self, sampler: _Built, x0, seed: int):
        jax, _ = _blackjax()
        import jax.numpy as jnp
        key = jax.random.key(int(seed) % 2**32)
        key, sub = jax.random.split(key)
        x0 = jnp.asarray(np.asarray(x0, dtype=float), dtype=jnp.result_type(float))
        return sampler.init_fn(x0, sub), key

    def step(self, sampler: _Built, state, batch):
        jax, _ = _blackjax()
        inner, key = state
        key, sub = jax.random.split(key)
        minibatch = (np.ascontiguousarray(batch, dtype=np.int32), float(sampler.problem.scale))
        return sampler.step_fn(sub, inner, minibatch, sampler.h), key

    def positions(self, sampler: _Built, state) -> np.ndarray:
        return np.asarray(self._position(state[0]), dtype=float)

    def _position(self, inner):
        return inner


@functools.lru_cache(maxsize=16)
def _compiled(kind, target, gamma: float, *extra):
    """``(init_fn(x0, key), step_fn(key, state, minibatch, h))`` of an adapter class, jitted;
    keyed by everything that determines them (the class, the target, the friction, extras)."""
    jax, blackjax = _blackjax()
    ge = _grad_estimator_for(target)
    if kind is _BlackJAXSGLD:
        alg = blackjax.sgld(ge)
        return (lambda x0, key: alg.init(x0)), jax.jit(lambda key, x, mb, h: alg.step(key, x, mb, h))
    if kind is BlackJAXSGHMC:
        (steps,) = extra
        alg = blackjax.sghmc(ge, num_integration_steps=steps, alpha=gamma, beta=0.0)
        return (lambda x0, key: alg.init(x0)), jax.jit(lambda key, x, mb, h: alg.step(key, x, mb, h))
    if kind is _BlackJAXSGNHT:
        alg = blackjax.sgnht(ge, alpha=gamma, beta=0.0)

        def init_fn(x0, key):
            keys = jax.random.split(key, x0.shape[0])
            return jax.vmap(lambda x, k: alg.init(x, k, gamma))(x0, keys)

        def step_fn(key, state, minibatch, h):
            keys = jax.random.split(key, minibatch[0].shape[0])
            return jax.vmap(alg.step, in_axes=(0, 0, (0, None), None))(keys, state, minibatch, h)

        return jax.jit(init_fn), jax.jit(step_fn)
    raise ValueError(f"no BlackJAX sampler for {kind.__name__}")


class _BlackJAXSGLD(_BlackJAXAdapter):
    """``blackjax.sgld`` (blackjax/sgmcmc/sgld.py, ``diffusions.overdamped_langevin``):

        x' = x + step_size grad log p(x, minibatch) + sqrt(2 T step_size) xi

    With ``step_size = h``, ``T = 1``: ``x' = x - h G(x, w) + sqrt(2 h) xi``, Euler-Maruyama for the
    overdamped Langevin diffusion (no friction: ``gamma`` is not used).  Expected weak order 1
    (Euler-Maruyama).  Stacked ``(n_chains, d)``: the noise is drawn for the raveled position,
    one independent normal per coordinate, so chains are independent."""

    NAME = "blackjax.sgld"
    SAMPLER = "sgld"
    DYNAMICS = "overdamped"
    WEAK_ORDER = 1.0
    CLAIM_SOURCE = ("BlackJAX 1.7.1 sgmcmc/diffusions.py: 'Euler solver for overdamped Langevin diffusion' (a "
                    "named scheme; Euler-Maruyama's weak order 1 is classical, Talay and Tubaro 1990)")
    RULE_ORDER = 1.0
    RULE_SOURCE = "Euler-Maruyama for overdamped Langevin: weak order 1"


class BlackJAXSGHMC(_BlackJAXAdapter):
    """``blackjax.sghmc`` (blackjax/sgmcmc/sghmc.py, ``build_kernel``, and ``diffusions.sghmc``): a call draws
    a fresh momentum ``m ~ N(0, I)``, makes ``num_integration_steps`` (``L = STEPS_PER_CALL``, an integer
    >= 1; BlackJAX's default 10) Euler steps with one minibatch

        x' = x + step_size m
        m' = (1 - alpha step_size) m + step_size grad log p(x, minibatch)
             + sqrt(step_size T (2 alpha - step_size T beta)) xi

    (``x'`` uses the old ``m``, ``m'`` the gradient at the old ``x``: the toolkit's ``em`` at
    ``step_size = h``, ``alpha = gamma``, ``T = 1``, ``beta = 0``) and returns the position only.  The
    last step's gradient reaches only the discarded momentum, so a call moves ``x`` by ``L h m0``
    (variance ``L^2 h^2``) plus ``L (L - 1) h^2 / 2`` times the gradient, where Langevin needs variance
    twice the drift: as ``h -> 0`` at fixed ``L`` the chain samples the target at temperature
    ``L / (L - 1)`` (:meth:`stationary_covariance`; ``L = 1`` is a random walk), with no weak order at
    all (benchmarks/RESULTS.md).  ``RULE_ORDER`` stays the Euler solver's, so the measurement keeps
    flagging it.  Stacked chains are independent."""

    NAME = "blackjax.sghmc"
    SAMPLER = "sghmc"
    DYNAMICS = "kinetic"
    WEAK_ORDER = 1.0
    CLAIM_SOURCE = ("BlackJAX 1.7.1 sgmcmc/diffusions.py: 'Euler solver for the diffusion equation of the SGHMC "
                    "algorithm' (a named scheme: Euler-Maruyama, weak order 1)")
    RULE_ORDER = 1.0
    RULE_SOURCE = ("momentum refreshment, then L Euler-Maruyama steps of kinetic Langevin (the toolkit's em) with "
                   "one batch: weak order 1")

    def __init__(self, num_integration_steps: int = 10):
        self.STEPS_PER_CALL = int_at_least("num_integration_steps", num_integration_steps, 1)

    def relaxation_time(self, h: float, gamma: float, langevin_time) -> float:
        """Langevin's relaxation time at friction ``1 / D``: with the momentum refreshed every
        ``tau = L h`` the velocity's correlation is ``e^(-gamma t) (1 - t / tau)^+`` (phase
        averaged), so positions diffuse with ``D = 1/gamma - (1 - e^(-gamma tau)) / (gamma^2 tau)``
        (``tau / 2`` for short calls, ``1 / gamma`` for long ones), as kinetic Langevin at friction
        ``1 / D`` does: a chain of short calls mixes slowly."""
        tau = self.STEPS_PER_CALL * h
        diffusion = 1.0 / gamma - (-math.expm1(-gamma * tau)) / (gamma * gamma * tau)
        return langevin_time(1.0 / max(diffusion, 1e-300))

    def _key(self) -> tuple:
        return (self.STEPS_PER_CALL,)

    def stationary_covariance(self, target, h: float, gamma: float) -> np.ndarray:
        """The exact stationary covariance of the positions with full gradients on a Gaussian
        ``target`` (mean ``target.mean``): one call is affine in ``(x, m)`` with Gaussian noise,
        ``x_L - mu = M (x_0 - mu) + e``, ``e ~ N(0, Q)`` (the fresh momentum and the ``L`` steps'
        noise), so the law solves the discrete Lyapunov equation ``S = M S M^T + Q``.  As
        ``h -> 0`` at fixed ``L`` it tends to ``L / (L - 1)`` times the target's covariance."""
        from scipy.linalg import solve_discrete_lyapunov

        d, a = target.dim, np.asarray(target.precision, dtype=float)
        eye = np.eye(d)
        step = np.block([[eye, h * eye], [-h * a, (1.0 - gamma * h) * eye]])  # x' uses m, m' the force at x
        noise = np.zeros((2 * d, 2 * d))
        noise[d:, d:] = 2.0 * gamma * h * eye
        carry = np.vstack([eye, np.zeros((d, d))])
        cov = np.zeros((2 * d, 2 * d))
        cov[d:, d:] = eye  # the refreshed momentum
        for _ in range(self.STEPS_PER_CALL):
            carry, cov = step @ carry, step @ cov @ step.T + noise
        return solve_discrete_lyapunov(carry[:d], cov[:d, :d])


class _BlackJAXSGNHT(ThermostatAdapter, _BlackJAXAdapter):
    """``blackjax.sgnht`` (blackjax/sgmcmc/sgnht.py, ``diffusions.sgnht``):

        x'  = x + step_size m
        m'  = (1 - xi step_size) m + step_size grad log p(x, minibatch)
              + sqrt(step_size T (2 alpha - step_size T beta)) eta
        xi' = xi + step_size (|m'|^2 / d - T)

    (``xi'`` reads the *new* momentum, unlike posteriors' sgnht; ``d`` counts every coordinate of
    the position pytree).  With ``step_size = h``, ``alpha = gamma``, ``T = 1``, ``beta = 0``: an
    Euler step of the Nose-Hoover-Langevin SDE of Ding et al. (2014), invariant law
    ``pi(x) N(m; 0, I) N(xi; alpha, 1/d)``.  Expected weak order 1.  ``xi`` is shared by all
    coordinates, so chains are mapped with ``jax.vmap`` (``CHAINS = "vmapped"``), one thermostat
    each; ``xi`` starts at ``alpha`` (BlackJAX's default).  The thermostat relaxes more slowly than
    the positions at large friction (:func:`~theory_checks.adapters._protocol.thermostat_time`);
    burn-in and window follow the slower of the two, twice over (``MIXING_FACTOR``)."""

    NAME = "blackjax.sgnht"
    SAMPLER = "sgnht"
    WEAK_ORDER = 1.0
    CLAIM_SOURCE = ("BlackJAX 1.7.1 sgmcmc/diffusions.py: 'Euler solver for the diffusion equation of the SGNHT "
                    "algorithm' (a named scheme: weak order 1)")
    RULE_SOURCE = "Euler step of the Nose-Hoover-Langevin SDE: weak order 1"

    def _position(self, inner):
        return inner.position


ADAPTERS = (_BlackJAXSGLD(), BlackJAXSGHMC(), _BlackJAXSGNHT())

__all__ = ["ADAPTERS", "LIBRARY", "VERSION"]
