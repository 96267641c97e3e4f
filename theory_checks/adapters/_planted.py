"""Planted bugs for the measurement to catch: posteriors' SGHMC copied line for line with its
noise scaled by a factor ``c``: :data:`NOISY_SGHMC` (``c = 1.05``, a limit error of 0.1025) and
:data:`HOT_SGHMC` (``c = 1.02``, 0.0404: the smallest error the limit check is powered to detect,
``analysis.DETECTABLE_LIMIT``).

Noise ``c`` times too large heats the dynamics to temperature ``c^2``: the stationary law tends,
as ``h -> 0``, to ``N(mu, c^2 Sigma)`` instead of ``N(mu, Sigma)``, an error of ``c^2 - 1``
(0.1025 for ``c = 1.05``, 0.0404 for ``c = 1.02``) in every whitened variance at every step
size.  Its bias therefore does not vanish as ``h -> 0``; a slope fitted where the ``O(h)`` part
still dominates can look first order, but the extrapolated bias (the ``limit`` check of
:func:`theory_checks.adapters._measure.measure_adapter`) is ``c^2 - 1``, not 0.  It declares what
the genuine sampler declares (the same rule order, the same equivalent toolkit scheme), as a copy
with a typo would.
"""

from __future__ import annotations

from functools import partial

from theory_checks.adapters.posteriors_adapter import _posteriors, _PosteriorsSGHMC

NOISE_FACTOR = 1.05  # the large positive control's
HOT_FACTOR = 1.02    # the positive control at the detectable effect


def _sghmc_update_noise_scaled(state, batch, log_posterior, lr, alpha=0.01, beta=0.0, sigma=1.0, temperature=1.0,
                               inplace=False, noise_factor=NOISE_FACTOR):
    """posteriors 0.1.3 ``sgmcmc.sghmc.update`` with the noise times ``noise_factor``."""
    posteriors, torch = _posteriors()
    from posteriors.tree_utils import flexi_tree_map
    from posteriors.utils import CatchAuxError

    with torch.no_grad(), CatchAuxError():
        grads, (log_post, aux) = torch.func.grad_and_value(log_posterior, has_aux=True)(state.params, batch)
    prec = sigma**-2

    def transform_params(p, m):
        return p + lr * prec * m

    def transform_momenta(m, g):
        noise = (temperature * lr * (2 * alpha - temperature * lr * beta)) ** 0.5 * torch.randn_like(m)
        return m + lr * g - lr * prec * alpha * m + noise_factor * noise

    params = flexi_tree_map(transform_params, state.params, state.momenta, inplace=inplace)
    momenta = flexi_tree_map(transform_momenta, state.momenta, grads, inplace=inplace)
    return posteriors.sgmcmc.sghmc.SGHMCState(params, momenta, log_post.detach(), state.step + 1), aux


class NoisySGHMC(_PosteriorsSGHMC):
    """posteriors' SGHMC with its noise scaled by ``noise_factor`` (a planted bug; see the module
    docstring); named ``planted.sghmc_noise_x<factor>``."""

    LIBRARY = "planted"

    def __init__(self, noise_factor: float = NOISE_FACTOR):
        self.noise_factor = float(noise_factor)
        self.NAME = f"planted.sghmc_noise_x{self.noise_factor:g}"

    def make_transform(self, posteriors, log_posterior, h, gamma):
        update = partial(_sghmc_update_noise_scaled, log_posterior=log_posterior, lr=h, alpha=gamma, beta=0.0,
                         sigma=1.0, temperature=1.0, noise_factor=self.noise_factor)
        return posteriors.types.Transform(posteriors.sgmcmc.sghmc.init, update)


NOISY_SGHMC = NoisySGHMC(NOISE_FACTOR)
HOT_SGHMC = NoisySGHMC(HOT_FACTOR)
