"""Adapters for the stochastic-gradient samplers of posteriors (``posteriors.sgmcmc``, tested with
posteriors 0.1.3 on torch), imported lazily: building one without posteriors installed raises an
``ImportError`` that says what to install.

Every adapter hands posteriors the toolkit's minibatch log-density as its ``log_posterior``:
a ``torch.autograd.Function`` whose forward is :meth:`AdapterProblem.log_density` and whose
gradient is :meth:`AdapterProblem.grad_log_density` (the toolkit's own minibatch force), so
posteriors' ``torch.func.grad_and_value`` returns exactly the toolkit's gradient for the batch
the toolkit chose.  Parameters are float64.  posteriors draws its noise from torch's global
generator; each adapter keeps its own generator state (seeded by ``init``) and swaps it in for
the duration of a step, so results depend on the seed only and the caller's generator is left
as it was.

Parameters map as ``lr = h``, ``temperature = 1``, ``beta = 0`` (no gradient-noise correction:
the toolkit measures the sampler as users run it), ``sigma = 1`` (unit mass, the design's
convention) and ``alpha = gamma`` (posteriors' friction; with ``sigma = 1`` its transformed
friction ``alpha / sigma^2`` is the design's ``gamma``).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from integrators._validation import positive_float
from theory_checks.adapters._protocol import AdapterProblem, ThermostatAdapter, missing_library

LIBRARY = "posteriors"  # the library this module adapts (found by theory_checks.adapters: LIBRARY and ADAPTERS)
ORDER = 1  # its place in the registry ADAPTERS and the conformance report
VERSION = "0.1.3"  # the release these adapters' rules were read from and measured with


def _posteriors():
    """``(posteriors, torch)``, or the ImportError that says what to install."""
    try:
        with warnings.catch_warnings():  # tensordict's FutureWarnings on posteriors' state classes
            warnings.simplefilter("ignore", FutureWarning)
            import posteriors
            import torch
    except ImportError as exc:
        raise missing_library("posteriors", f"posteriors=={VERSION}") from exc
    return posteriors, torch


@functools.cache
def _bridge():
    """The ``torch.autograd.Function`` that carries the toolkit's log-density and gradient into
    torch: ``apply(x, batch, problem) -> (log_density, gradient)`` for ``x`` of shape
    ``(n_chains, d)`` (or ``(d,)`` under ``torch.func.vmap``, whose rule calls it on the whole
    block at once); the gradient is the toolkit's, passed through ``backward``."""
    _, torch = _posteriors()

    class ToolkitLogDensity(torch.autograd.Function):
        @staticmethod
        def forward(x, batch, problem):
            flat = x.detach().cpu().numpy().reshape(-1, problem.dim)
            idx = batch.detach().cpu().numpy().reshape(flat.shape[0], -1)
            value = torch.from_numpy(problem.log_density(flat, idx)).to(x.dtype).reshape(x.shape[:-1])
            grad = torch.from_numpy(problem.grad_log_density(flat, idx)).to(x.dtype).reshape(x.shape)
            return value, grad

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(output[1])

        @staticmethod
        def backward(ctx, grad_value, grad_grad):
            (grad,) = ctx.saved_tensors
            return grad_value[..., None] * grad, None, None

        @staticmethod
        def vmap(info, in_dims, x, batch, problem):
            x_dim, batch_dim, _ = in_dims
            x = x.movedim(x_dim, 0) if x_dim is not None else x.expand(info.batch_size, *x.shape)
            batch = batch.movedim(batch_dim, 0) if batch_dim is not None else batch.expand(info.batch_size,
                                                                                          *batch.shape)
            return ToolkitLogDensity.apply(x, batch, problem), (0, 0)

    return ToolkitLogDensity


def log_posterior_for(problem: AdapterProblem):
    """posteriors' ``log_posterior(params, batch) -> (value, aux)`` for the toolkit's problem:
    the sum over chains of each chain's minibatch log-density (its gradient in row ``c`` is chain
    ``c``'s), no auxiliary output."""
    _, torch = _posteriors()
    bridge = _bridge()

    def log_posterior(params, batch):
        value, _ = bridge.apply(params, batch, problem)
        return value.sum(), torch.tensor([])

    return log_posterior


class _Built:
    """What :meth:`PosteriorsAdapter.build` returns: the problem, the transform and the step."""

    def __init__(self, problem, transform, h, gamma):
        self.problem, self.transform, self.h, self.gamma = problem, transform, h, gamma


class PosteriorsAdapter:
    """Shared machinery: build the transform, seed it, step it under its own generator."""

    LIBRARY = "posteriors"
    CHAINS = "stacked"
    EXACT_GAUSSIAN_X = False
    EQUIVALENT_SCHEME = None

    def make_transform(self, posteriors, log_posterior, h: float, gamma: float):
        """The posteriors transform of this sampler at ``h`` and ``gamma`` (each subclass's own)."""
        raise NotImplementedError

    def build(self, problem: AdapterProblem, h: float, gamma: float) -> _Built:
        """The transform for ``problem`` at step size ``h`` and friction ``gamma``."""
        posteriors, _ = _posteriors()
        h, gamma = positive_float("h", h), positive_float("gamma", gamma)
        return _Built(problem, self.make_transform(posteriors, log_posterior_for(problem), h, gamma), h, gamma)

    def _init_state(self, sampler: _Built, params):
        return sampler.transform.init(params)

    def init(self, sampler: _Built, x0, seed: int):
        """The transform's state at ``x0``, under a torch generator seeded by ``seed``."""
        _, torch = _posteriors()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed) % 2**63)
            state = self._init_state(sampler, torch.tensor(np.asarray(x0, dtype=float)))
            return state, torch.get_rng_state()

    def _update(self, sampler: _Built, state, batch):
        new, _ = sampler.transform.update(state, batch)
        return new

    def step(self, sampler: _Built, state, batch):
        """One update of every chain, under the state's own generator."""
        _, torch = _posteriors()
        inner, rng = state
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(rng)
            inner = self._update(sampler, inner, torch.from_numpy(np.ascontiguousarray(batch, dtype=np.int64)))
            return inner, torch.get_rng_state()

    def positions(self, sampler: _Built, state) -> np.ndarray:
        """The chains' positions (the transform state's ``params``)."""
        return state[0].params.detach().numpy()


class _PosteriorsSGLD(PosteriorsAdapter):
    """``posteriors.sgmcmc.sgld`` (posteriors/sgmcmc/sgld.py, ``update``):

        theta' = theta + lr * grad log p(theta, batch) + sqrt(T lr (2 - T lr beta)) * xi

    With ``lr = h``, ``T = 1``, ``beta = 0``: ``x' = x - h G(x, w) + sqrt(2 h) xi``, the
    Euler-Maruyama step of the overdamped Langevin diffusion ``dX = -grad f dt + sqrt(2) dW``
    (no friction: ``gamma`` is not used).  Expected weak order 1 (Euler-Maruyama; on a Gaussian
    target each eigen-direction of precision ``lambda`` has stationary variance
    ``1 / (lambda (1 - lambda h / 2))``, a bias ``h / 2 + O(h^2)`` relative).  Parameters stacked
    ``(n_chains, d)``: noise and gradient act coordinate by coordinate, so chains are independent."""

    NAME = "posteriors.sgld"
    SAMPLER = "sgld"
    DYNAMICS = "overdamped"
    WEAK_ORDER = None
    CLAIM_SOURCE = ("posteriors 0.1.3 sgld docstring: the rule of Welling and Teh (2011), whose paper states no "
                    "order for a constant step; no order claimed")
    RULE_ORDER = 1.0
    RULE_SOURCE = "Euler-Maruyama for overdamped Langevin (x' = x + h grad log p + sqrt(2h) xi): weak order 1"

    def make_transform(self, posteriors, log_posterior, h, gamma):
        """``posteriors.sgmcmc.sgld.build`` with the settings of the class docstring."""
        return posteriors.sgmcmc.sgld.build(log_posterior, lr=h, beta=0.0, temperature=1.0)


class _PosteriorsSGHMC(PosteriorsAdapter):
    """``posteriors.sgmcmc.sghmc`` (posteriors/sgmcmc/sghmc.py, ``update``):

        theta' = theta + lr sigma^-2 m
        m'     = m + lr grad log p(theta, batch) - lr sigma^-2 alpha m + sqrt(lr T (2 alpha - lr beta T)) xi

    (``theta'`` uses the old ``m``; ``m'`` the gradient at the old ``theta``).  With ``lr = h``,
    ``sigma = 1``, ``alpha = gamma``, ``T = 1``, ``beta = 0``:
    ``x' = x + h v``, ``v' = v - h G(x, w) - h gamma v + sqrt(2 gamma h) xi``, exactly the
    toolkit's Euler-Maruyama scheme ``em`` (so the exact oracle of ``em x plan`` referees it).
    Expected weak order 1 (Euler-Maruyama); under every plan 1.  Stacked chains: independent."""

    NAME = "posteriors.sghmc"
    SAMPLER = "sghmc"
    DYNAMICS = "kinetic"
    WEAK_ORDER = None
    CLAIM_SOURCE = ("posteriors 0.1.3 sghmc docstring: the rule of Chen et al. (2014), whose paper states no "
                    "discretisation order; no order claimed")
    RULE_ORDER = 1.0
    RULE_SOURCE = "Euler-Maruyama for kinetic Langevin (the toolkit's em, step for step): weak order 1"
    EQUIVALENT_SCHEME = "em"

    def make_transform(self, posteriors, log_posterior, h, gamma):
        """``posteriors.sgmcmc.sghmc.build`` with the settings of the class docstring."""
        return posteriors.sgmcmc.sghmc.build(log_posterior, lr=h, alpha=gamma, beta=0.0, sigma=1.0, temperature=1.0)


class _PosteriorsBAOA(PosteriorsAdapter):
    """``posteriors.sgmcmc.baoa`` (posteriors/sgmcmc/baoa.py, ``update``):

        m_1/2     = m + lr grad log p(theta, batch)
        theta_1/2 = theta + (lr / 2) sigma^-2 m_1/2
        m'        = exp(-g lr) m_1/2 + sqrt(T (1 - exp(-2 g lr))) sigma xi,     g = alpha sigma^-2
        theta'    = theta_1/2 + (lr / 2) sigma^-2 m'

    With ``lr = h``, ``sigma = 1``, ``alpha = gamma``, ``T = 1``: ``B(h) A(h/2) O(h) A(h/2)``,
    BAOAB with its two half kicks at ``x_k`` merged into one, whose batch is the batch of the step
    it starts (the design's first-same-as-last convention): the positions are those of the
    toolkit's ``baoab`` driven by the same noise, so the exact oracle of ``baoab x plan``
    referees it.  Expected: weak order 2 with full gradients, and on Gaussian targets an exact
    position law at every stable ``h`` (Leimkuhler-Matthews); 1 under ``iid``, 2 under ``sms``
    (the paper, observed for BAOAB).  Stacked chains: independent."""

    NAME = "posteriors.baoa"
    SAMPLER = "baoa"
    DYNAMICS = "kinetic"
    WEAK_ORDER = 2.0
    CLAIM_SOURCE = ("posteriors 0.1.3 baoa docstring: 'equivalent to BAOAB when analyzing functions of the "
                    "parameter trajectory', citing Leimkuhler and Matthews (2015), where BAOAB has weak order 2")
    RULE_ORDER = 2.0
    RULE_SOURCE = ("BAOAB with merged half kicks (positions = the toolkit's baoab): weak order 2, exact position "
                   "law on Gaussian targets with full gradients")
    EXACT_GAUSSIAN_X = True
    EQUIVALENT_SCHEME = "baoab"

    def make_transform(self, posteriors, log_posterior, h, gamma):
        """``posteriors.sgmcmc.baoa.build`` with the settings of the class docstring."""
        return posteriors.sgmcmc.baoa.build(log_posterior, lr=h, alpha=gamma, sigma=1.0, temperature=1.0)


class PosteriorsSGNHT(ThermostatAdapter, PosteriorsAdapter):
    """``posteriors.sgmcmc.sgnht`` (posteriors/sgmcmc/sgnht.py, ``update``):

        theta' = theta + lr sigma^-2 m
        m'     = m + lr grad log p(theta, batch) - lr sigma^-2 xi m + sqrt(lr T (2 alpha - lr beta T)) eta
        xi'    = xi + lr (sigma^-2 mean(m^2) - T)

    every right-hand side at the old state (the mean over every coordinate of every parameter).  With
    ``lr = h``, ``sigma = 1``, ``alpha = gamma``, ``T = 1``, ``beta = 0``: the explicit Euler step of the
    Nose-Hoover-Langevin SDE of Ding et al. (2014), invariant law ``pi(x) N(v; 0, I) N(xi; gamma, 1/d)``;
    expected weak order 1 (Leimkuhler and Shang (2016) reach 2 only by splitting).  ``xi`` (starting at
    ``alpha``) is one number for all coordinates, so chains are mapped with ``torch.func.vmap``
    (``randomness="different"``), one ``xi`` each, as a user runs SGNHT on a ``d``-dimensional problem.
    Burn-in and window follow the slower of thermostat and positions
    (:func:`~theory_checks.adapters._protocol.thermostat_time`), twice over (``MIXING_FACTOR``)."""

    NAME = "posteriors.sgnht"
    SAMPLER = "sgnht"
    WEAK_ORDER = None
    CLAIM_SOURCE = ("posteriors 0.1.3 sgnht docstring: the rule of Ding et al. (2014), whose paper states no "
                    "discretisation order; no order claimed")
    RULE_SOURCE = "explicit Euler for the Nose-Hoover-Langevin SDE: weak order 1"

    def make_transform(self, posteriors, log_posterior, h, gamma):
        """``posteriors.sgmcmc.sgnht.build`` with the settings of the class docstring."""
        return posteriors.sgmcmc.sgnht.build(log_posterior, lr=h, alpha=gamma, beta=0.0, sigma=1.0, temperature=1.0)

    def build(self, problem, h, gamma):
        """The transform, its update applied chain by chain (``xi`` is one number per chain)."""
        built = super().build(problem, h, gamma)
        posteriors, torch = _posteriors()
        sgnht, transform = posteriors.sgmcmc.sgnht, built.transform

        def one_chain(params, momenta, xi, batch):
            new, _ = transform.update(sgnht.SGNHTState(params, momenta, xi), batch)
            return new.params, new.momenta, new.xi

        built.vmapped = torch.func.vmap(one_chain, randomness="different")
        return built

    def _init_state(self, sampler, params):
        _, torch = _posteriors()
        return (params, torch.randn_like(params), torch.full(params.shape[:1], float(sampler.gamma),
                                                             dtype=params.dtype))

    def _update(self, sampler, state, batch):
        return sampler.vmapped(*state, batch)

    def positions(self, sampler, state) -> np.ndarray:
        """The chains' positions (the first of the per-chain arrays)."""
        return state[0][0].detach().numpy()


ADAPTERS = (_PosteriorsSGLD(), _PosteriorsSGHMC(), _PosteriorsBAOA(), PosteriorsSGNHT())

__all__ = ["ADAPTERS", "LIBRARY", "VERSION"]
