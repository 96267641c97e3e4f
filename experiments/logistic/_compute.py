"""The logistic-regression experiment of the paper's Section 3.4.

Bayesian multinomial logistic regression with prior ``N(0, sigma^2 I)``, ``sigma = 50^-1/2``
(precision 50), batch size 200, control variate at the L-BFGS minimizer, and five samplers:
SG-HMC (EM x iid), BAOAB x iid, BAOAB x sms, UBU x iid, UBU x sms.  For each sampler and a ladder
of step sizes it reports the telescoping bias (:mod:`bias._telescoping`) of the posterior
probability of the true class of each test point, averaged in absolute value over the test set
(the paper's "average bias of probability of true class"), and the accuracy, NLL, ACE and RPS of
the posterior-mean predictive at each step size (metric definitions in :mod:`bias._metrics`).

Conventions: friction ``gamma = 1``; BAOAB as in the paper's listings (O step with
``exp(-gamma h / 2)``, i.e. standard BAOAB at friction ``gamma / 2``; ``paper_baoab=False`` runs the
standard one).

Data: scikit-learn's digits (shipped inside the package, the embedded default) or Fashion-MNIST
from local IDX files (``data_dir``), both read by :mod:`data_sets` and turned into features
here (:func:`digits_features`, :func:`fashion_features`).

Its outputs as data (the verdicts, the figure) are :mod:`experiments.logistic._output`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba as nb
import numpy as np

import data_sets as datasets
from bias._metrics import all_metrics
from bias._telescoping import telescoping_bias
from integrators import MultinomialLogisticTarget, RunSpec
from integrators._validation import preset_settings
from integrators.seeds import derive
from integrators.targets._logistic import softmax_probabilities

SAMPLERS = [("em", "iid"), ("baoab", "iid"), ("baoab", "sms"), ("ubu", "iid"), ("ubu", "sms")]
NAMES = {("em", "iid"): "SG-HMC", ("baoab", "iid"): "SG-BAOAB", ("baoab", "sms"): "SMS-BAOAB",
         ("ubu", "iid"): "SG-UBU", ("ubu", "sms"): "SMS-UBU"}
PRESETS = {
    "tiny": {"components": 8, "n_train": 400, "h0": 2.0**-4, "levels": 1, "base_epochs": 40,
             "n_chains": 4, "n_test": 200, "gamma": 1.0},
    "quick": {"components": 16, "n_train": 1200, "h0": 2.0**-4, "levels": 3, "base_epochs": 60,
              "n_chains": 8, "n_test": 300, "gamma": 1.0},
    "full": {"components": None, "n_train": 1200, "h0": 2.0**-4, "levels": 4, "base_epochs": 100,
             "n_chains": 8, "n_test": 597, "gamma": 1.0},
}
BATCH_SIZE = 200
PRIOR_PRECISION = 50.0


@nb.njit(nogil=True)
def predictive_test_functions(x, out, data):
    """The test functions of the chains: the predictive probabilities on the test set, into ``out``.

    Parameters
    ----------
    x : numpy.ndarray
        ``(K p,)`` the regression weights, ``K`` classes of ``p`` features.
    out : numpy.ndarray
        ``(1 + n K,)`` written: ``out[0]`` the mean over the test set of p(true class | x),
        ``out[1 + i K + k]`` p_k(x_i).
    data : tuple
        ``(features (n, p), labels (n,))`` of the test set.
    """
    feats, labels = data
    n, p = feats.shape
    k_classes = x.shape[0] // p
    total = 0.0
    for i in range(n):
        z = softmax_probabilities(x, feats, i, k_classes)
        for k in range(k_classes):
            out[1 + i * k_classes + k] = z[k]
        total += z[labels[i]]
    out[0] = total / n


@dataclass
class Row:
    """One sampler at one step size: its bias and the metrics of its posterior-mean predictive."""

    sampler: str
    scheme: str
    plan: str
    h: float
    bias: float      # mean over test points of |E_h p_true(i) - E_{h_finest} p_true(i)| (telescoping)
    bias_se: float   # mean over test points of its standard error
    floor: float     # mean over test points of the finest level's |difference|
    bias_rms: float  # sqrt(mean(bias^2) - mean(se^2)): root-mean-square bias, noise removed
    p_true: float    # mean over the test set of the posterior mean of p(true class)
    accuracy: float
    nll: float
    ace: float
    rps: float
    seconds: float   # since the sampler's ladder started
    diverged: str = ""  # empty, or where the sampler diverged
    bias_mean_se: float = float("nan")  # standard error of bias itself (bootstrap over replicates)


def digits_features(n_components: int | None = 16, n_train: int = 1200, seed: int = 0):
    """Scikit-learn's digits as features.

    The digits of :func:`data_sets.embedded_digits` (the same split for ``seed``) as the
    pixel counts 0..16, standardized on the training set, reduced to ``n_components`` principal
    components scaled to unit variance, plus a constant feature for the intercept.

    Parameters
    ----------
    n_components : int or None
        Principal components kept (None: all 64 pixels).
    n_train : int
        Training images.
    seed : int
        Seed of the split.

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``.
    """
    digits = datasets.embedded_digits(seed=seed, n_train=n_train)
    # the loader's pixels are k / 16 in float32, exact: times 16 gives back the counts
    x_train, x_test = (x.reshape(len(x), -1).astype(float) * 16.0 for x in (digits.x_train, digits.x_test))
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    if n_components:
        _, _, vt = np.linalg.svd(x_train, full_matrices=False)
        basis = vt[:n_components].T
        scale = np.sqrt(np.mean((x_train @ basis) ** 2, axis=0))
        x_train, x_test = x_train @ basis / scale, x_test @ basis / scale
    return with_intercept(x_train), digits.y_train, with_intercept(x_test), digits.y_test


def fashion_features(folder):
    """Fashion-MNIST as features: pixels in [0, 1] flattened, plus the intercept.

    Parameters
    ----------
    folder : str or path-like
        The folder of the IDX files (:func:`data_sets.load_fashion_mnist`).

    Returns
    -------
    tuple
        ``(x_train, y_train, x_test, y_test)``.
    """
    images = datasets.load_fashion_mnist(folder)
    # the loader's float32 pixels are k / 255 rounded: recover k, then divide in float64
    flat = lambda x: np.rint(x.reshape(len(x), -1).astype(float) * 255.0) / 255.0  # noqa: E731
    return with_intercept(flat(images.x_train)), images.y_train, with_intercept(flat(images.x_test)), images.y_test


def with_intercept(x: np.ndarray) -> np.ndarray:
    """``x`` with a last column of ones (the intercept's feature)."""
    return np.hstack([x, np.ones((x.shape[0], 1))])


def load_data(preset: str, data_dir=None, seed: int = 0):
    """The data of a preset: the embedded digits, or Fashion-MNIST from ``data_dir``."""
    cfg = preset_settings(PRESETS, preset)
    if data_dir is None:
        x_train, y_train, x_test, y_test = digits_features(cfg["components"], cfg["n_train"], seed)
        source = f"scikit-learn digits (PCA {cfg['components'] or 'none'})"
    else:
        x_train, y_train, x_test, y_test = fashion_features(data_dir)
        source = f"Fashion-MNIST from {data_dir}"
    return x_train, y_train, x_test[: cfg["n_test"]], y_test[: cfg["n_test"]], source


def run_sampler(target, test_data, scheme, plan, preset, seed=0, paper_baoab: bool = True) -> list[Row]:
    """One sampler: the telescoping ladder from ``h0`` down ``levels`` levels."""
    cfg = preset_settings(PRESETS, preset)
    gamma = cfg["gamma"] / 2 if (scheme == "baoab" and paper_baoab) else cfg["gamma"]
    x_test, y_test = test_data
    k_classes = target.n_classes
    n_tests = 1 + len(y_test) * k_classes
    t0 = time.time()
    mode = target.mode()  # start and control-variate reference, computed once for every level
    res = telescoping_bias(RunSpec.from_options(target, scheme, plan, h=cfg["h0"], gamma=gamma,
                                                n_chains=cfg["n_chains"], seed=seed, batch_size=BATCH_SIZE,
                                                test_functions=predictive_test_functions, n_test_functions=n_tests,
                                                test_data=(x_test, y_test), x0=mode, control_variate=True, x_ref=mode),
                           levels=cfg["levels"], base_epochs=cfg["base_epochs"], test_every=5, on_diverge="skip")
    # per test point, the probability of its true class: entries 1 + i K + y_i
    true_cols = 1 + np.arange(len(y_test)) * k_classes + y_test
    boot = res.bootstrap_biases(lambda b: float(np.mean(np.abs(b[true_cols]))),
                                seed=derive(seed, "logistic", "bootstrap"))
    mean_se = np.std(boot, axis=0, ddof=1)
    rows = []
    nan = float("nan")
    for level, h in enumerate(res.hs):
        if not np.isfinite(res.bias[level, 0]):  # this level or a coarser one diverged
            where = ", ".join(f"h={res.hs[lv]:g} (coarse step {st})" for lv, st in res.diverged.items()
                              if lv >= level)
            rows.append(Row(NAMES[(scheme, plan)], scheme, plan, float(h), nan, nan, nan, nan, nan, nan, nan,
                            nan, nan, time.time() - t0, diverged=f"diverged at {where}" if where else "diverged"))
            continue
        b, se = res.bias[level, true_cols], res.bias_se[level, true_cols]
        probs = res.coarse_means[level, 1:].reshape(len(y_test), k_classes)
        metrics = all_metrics(probs / probs.sum(axis=1, keepdims=True), y_test)
        rows.append(Row(NAMES[(scheme, plan)], scheme, plan, float(h),
                        float(np.mean(np.abs(b))), float(np.mean(se)), float(np.mean(res.floor[true_cols])),
                        float(np.sqrt(max(np.mean(b**2) - np.mean(se**2), 0.0))),
                        float(res.coarse_means[level, 0]), seconds=time.time() - t0,
                        bias_mean_se=float(mean_se[level]), **metrics))
    return rows


def compute(preset: str = "quick", seed: int = 0, *, data_dir=None, progress=None) -> list[Row]:
    """All five samplers in one process, their rows returned."""
    preset_settings(PRESETS, preset)
    x_train, y_train, x_test, y_test, _ = load_data(preset, data_dir, seed)
    target = MultinomialLogisticTarget(x_train, y_train, n_classes=10, prior_precision=PRIOR_PRECISION)
    rows = []
    t0 = time.time()
    for scheme, plan in SAMPLERS:
        rows.extend(run_sampler(target, (np.ascontiguousarray(x_test), y_test), scheme, plan, preset, seed))
        if progress:
            progress(f"{NAMES[(scheme, plan)]}: done in {time.time() - t0:.0f} s")
    return rows
