"""SMS-GHMC against SMS-UBU on the multinomial logistic regression of Section 3.4 (the paper's
supplement D, "Comparison with Symmetric Minibatch Splitting HMC").

The paper ran SMS-GHMC (Algorithm 7, :func:`integrators.sms_ghmc`) with the same control variate,
batch size and data as its SMS-UBU runs and found the same calibration only at a step 100 times
smaller (``h = 1e-5``, ``L = 10`` sweeps per proposal, ``alpha = 0.7``, acceptance 0.844), hence at
a far larger cost.  Here both samplers run on the data of :mod:`experiments.logistic._compute` (scikit-learn's
digits after PCA, prior precision 50, batch 200, control variate at the L-BFGS mode, every chain
started at the mode) and are scored against one reference predictive:

* SMS-GHMC at each ``h`` of a ladder: ``n_chains`` independent chains of ``n_iter`` iterations of
  ``L`` forward-and-backward sweeps, i.e. ``2 L n_iter`` passes over the data per chain (plus one
  full potential per iteration for the accept/reject step, not counted);
* SMS-UBU (:func:`integrators.sample`, friction 1) at each ``h`` of its ladder, given the same
  number of passes over the data per chain (``2 L n_iter`` epochs, ``N_m`` steps each);
* the estimator of the posterior predictive is the same for both: the mean over the chains of
  ``softmax(features W)`` at each chain's final state (one draw per chain), so both carry the
  same Monte Carlo noise, ``O(n_chains^-1/2)``, and differ only by bias (SMS-UBU) or by
  incomplete mixing from the mode (SMS-GHMC);
* the reference is a long SMS-UBU run at ``ref_h`` (a quarter of the smallest SMS-UBU step),
  averaged over time and over ``ref_chains`` chains through test functions.

Reported per (sampler, h): the acceptance rate (SMS-GHMC), the passes over the data per chain,
accuracy, NLL, ACE, RPS of the predictive (:mod:`bias._metrics`), the mean over test points of
``|p(true class) - p_ref(true class)|`` with its standard error by the jackknife over chains, and
the spread ratio: the standard deviation of ``p(true class)`` over the chains' final states
(averaged over test points) over that of the reference's chains. A run whose chains never left the
mode (spread ratio below :data:`STUCK`, as SMS-GHMC when it rejects every proposal) has the error
of a point estimate, which on a posterior this concentrated is small: it is marked as such and never
counted as the best sampler.
"""

from __future__ import annotations

import math

import numpy as np

from bias._metrics import all_metrics
from experiments.logistic import _compute as logistic
from integrators import MultinomialLogisticTarget, RunSpec, sample, sms_ghmc
from integrators._validation import preset_settings

SAMPLERS = ("SMS-GHMC", "SMS-UBU")
REFERENCE = "reference"
STUCK = 0.1  # a run whose chains spread less than this fraction of the reference's never left the mode
PRESETS = {
    # ``data``: the preset of experiments.logistic._compute whose data set is used (tiny: PCA 8, 400 training images)
    "tiny": {"data": "tiny", "n_chains": 12, "n_iter": 25, "n_sweeps": 10, "alpha": 0.7,
             "ghmc_h": (0.04, 0.01), "ubu_h": (2.0**-4, 2.0**-6), "ref_chains": 16, "ref_epochs": 400},
    "quick": {"data": "quick", "n_chains": 16, "n_iter": 60, "n_sweeps": 10, "alpha": 0.7,
              "ghmc_h": (0.02, 0.01, 0.005, 0.0025), "ubu_h": (2.0**-4, 2.0**-5, 2.0**-6),
              "ref_chains": 16, "ref_epochs": 1200},
    "full": {"data": "full", "n_chains": 64, "n_iter": 1000, "n_sweeps": 10, "alpha": 0.7,
             "ghmc_h": (0.04, 0.02, 0.01, 0.005, 0.0025), "ubu_h": (2.0**-4, 2.0**-5, 2.0**-6, 2.0**-7),
             "ref_chains": 64, "ref_epochs": 20000},
}


def _config(preset: str) -> dict:
    return preset_settings(PRESETS, preset)


def units(preset: str) -> list[dict]:
    """One unit per (sampler, h), and the reference."""
    cfg = _config(preset)
    return ([{"sampler": "SMS-GHMC", "h": h} for h in cfg["ghmc_h"]]
            + [{"sampler": "SMS-UBU", "h": h} for h in cfg["ubu_h"]] + [{"sampler": REFERENCE}])


def problem(preset: str):
    """The data and posterior of :mod:`experiments.logistic._compute`, and its mode (every chain's start)."""
    x_train, y_train, x_test, y_test, source = logistic.load_data(_config(preset)["data"])
    target = MultinomialLogisticTarget(x_train, y_train, n_classes=10, prior_precision=logistic.PRIOR_PRECISION)
    return target, np.ascontiguousarray(x_test), y_test, target.mode(), source


def epochs_per_chain(preset: str) -> int:
    """Passes over the data per chain of every run but the reference."""
    cfg = _config(preset)
    return 2 * cfg["n_sweeps"] * cfg["n_iter"]


def run_unit(unit: dict, preset: str, seed: int, *, threads: int | None = None) -> dict:
    """The predictive of one (sampler, h) from its chains' final states, or the reference predictive."""
    cfg = _config(preset)
    target, x_test, y_test, mode, source = problem(preset)
    out = {"data": source, "labels": y_test.tolist(), "sampler": unit["sampler"], "h": unit.get("h"),
           "epochs_per_chain": epochs_per_chain(preset)}
    if unit["sampler"] == REFERENCE:
        h = min(cfg["ubu_h"]) / 4
        res = _sms_ubu(target, mode, (x_test, y_test), h=h, n_chains=cfg["ref_chains"], epochs=cfg["ref_epochs"],
                       seed=seed, threads=threads)
        ok = res.ok
        probs = res.chain_tests[ok, 1:].mean(axis=0).reshape(len(y_test), target.n_classes)
        out.update({"h": h, "epochs_per_chain": cfg["ref_epochs"], "chains": int(ok.sum()),
                    "probs": probs.tolist(), "diverged": res.first_divergence_step,
                    "chain_p_true": _p_true(target, res.x[:len(ok)][ok], x_test, y_test).tolist()})
        return out
    h = float(unit["h"])
    if unit["sampler"] == "SMS-GHMC":
        res = sms_ghmc(RunSpec.from_options(target, plan="sms", h=h, batch_size=logistic.BATCH_SIZE,
                                            n_steps=cfg["n_iter"], burn_in=cfg["n_iter"] // 5, n_chains=cfg["n_chains"],
                                            seed=seed, x0=mode, control_variate=True), n_sweeps=cfg["n_sweeps"],
                       alpha=cfg["alpha"])
        ok = res.diverged_at < 0
        out.update({"acceptance": res.acceptance_rate, "n_sweeps": cfg["n_sweeps"], "alpha": cfg["alpha"],
                    "iterations": cfg["n_iter"]})
        first = int(res.diverged_at[~ok].min()) if (~ok).any() else None
    elif unit["sampler"] == "SMS-UBU":
        res = _sms_ubu(target, mode, (x_test, y_test), h=h, n_chains=cfg["n_chains"],
                       epochs=epochs_per_chain(preset), seed=seed, threads=threads)
        ok = res.ok
        first = res.first_divergence_step
        out["steps"] = res.n_steps
    else:
        raise ValueError(f"unknown sampler {unit['sampler']!r}; choose from {', '.join(SAMPLERS)} or {REFERENCE}")
    p_true = _p_true(target, res.x[:len(ok)][ok], x_test, y_test)
    probs = np.mean([target.predict_proba(x, x_test) for x in res.x[:len(ok)][ok]], axis=0) if ok.any() else None
    out.update({"chains": int(ok.sum()), "diverged": first, "probs": None if probs is None else probs.tolist(),
                "chain_p_true": p_true.tolist()})
    return out


def _p_true(target, states, x_test, y_test) -> np.ndarray:
    """``(chains, n_test)``: each state's predicted probability of every test point's true class."""
    return np.array([target.predict_proba(x, x_test)[np.arange(len(y_test)), y_test] for x in states])


def _sms_ubu(target, mode, test, *, h: float, n_chains: int, epochs: int, seed: int, threads: int | None = None):
    """SMS-UBU at friction 1 from the mode for ``epochs`` passes (a fifth of them burn-in), the
    predictive probabilities averaged over time as test functions (every run of SMS-UBU here goes
    through this one kernel, compiled once)."""
    x_test, y_test = test
    n_steps = epochs * math.ceil(target.n_data / logistic.BATCH_SIZE)
    return sample(target, "ubu", "sms", h=h, gamma=1.0, n_chains=n_chains, n_steps=n_steps, burn_in=n_steps // 5,
                  batch_size=logistic.BATCH_SIZE, x0=mode, control_variate=True, x_ref=mode, seed=seed,
                  test_functions=logistic.predictive_test_functions,
                  n_test_functions=1 + y_test.size * target.n_classes, test_data=(x_test, y_test), threads=threads)


def jackknife_error(chain_p_true: np.ndarray, p_ref: np.ndarray) -> tuple[float, float]:
    """``mean_i |mean_c p_ci - p_ref_i|`` and its jackknife standard error over the chains ``c``."""
    c = chain_p_true.shape[0]
    full = float(np.mean(np.abs(chain_p_true.mean(axis=0) - p_ref)))
    if c < 2:
        return full, float("nan")
    total = chain_p_true.sum(axis=0)
    loo = np.array([np.mean(np.abs((total - chain_p_true[k]) / (c - 1) - p_ref)) for k in range(c)])
    return full, float(math.sqrt((c - 1) / c * np.sum((loo - loo.mean()) ** 2)))


def rows(results: list[dict]) -> list[dict]:
    """One row per (sampler, h) and one for the reference; a diverged run has empty numbers."""
    ref = next((r for r in results if r["sampler"] == REFERENCE), None)
    if ref is None:
        raise ValueError("the reference run is missing")
    labels = np.array(ref["labels"])
    p_ref = np.array(ref["probs"])[np.arange(len(labels)), labels]
    ref_spread = float(np.mean(np.std(ref["chain_p_true"], axis=0, ddof=1)))
    out = []
    for r in sorted(results, key=lambda r: (r["sampler"] != REFERENCE, r["sampler"], -r["h"])):
        row = {"sampler": r["sampler"], "h": r["h"], "epochs_per_chain": r["epochs_per_chain"],
               "chains": r["chains"], "acceptance": r.get("acceptance", ""), "diverged": r["diverged"] or "",
               "accuracy": "", "nll": "", "ace": "", "rps": "", "p_true_error": "", "p_true_error_se": "",
               "spread_ratio": ""}
        if r["probs"] is not None and r["chains"]:
            probs = np.array(r["probs"])
            row.update(all_metrics(probs / probs.sum(axis=1, keepdims=True), labels))
            chains = np.array(r["chain_p_true"])
            if len(chains) > 1:
                row["spread_ratio"] = float(np.mean(np.std(chains, axis=0, ddof=1))) / ref_spread
            if r["sampler"] != REFERENCE:
                err, se = jackknife_error(chains, p_ref)
                row.update({"p_true_error": err, "p_true_error_se": se})
        out.append(row)
    return out


def stuck(row: dict) -> bool:
    """A run whose chains barely spread (:data:`STUCK` of the reference's spread) never left the
    mode: its predictive is a point estimate's, so its error says nothing about sampling."""
    return row["spread_ratio"] != "" and row["spread_ratio"] < STUCK


def h_label(h: float) -> str:
    """A step size as its tick label (``1/64`` or three significant digits)."""
    k = -math.log2(h) if h > 0 else 0.0
    if 1 <= k <= 16 and k.is_integer():
        return f"1/{2 ** int(k)}"
    text = f"{h:.3g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def _label_steps(ax, hs) -> None:
    """Ticks at exactly the step sizes drawn in ``ax`` (a log axis spanning less than a decade
    otherwise labels one power of ten at most), no minor tick labels."""
    import matplotlib.ticker

    hs = sorted({float(h) for h in hs})
    if hs:
        ax.set_xticks(hs, [h_label(h) for h in hs], rotation=45 if len(hs) > 4 else 0, fontsize=8)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def plot(table: list[dict]):
    """Error of p(true class) against the reference (bars: 2 jackknife s.e.; runs that never left
    the mode and diverged runs are marked, never plotted as numbers), the spread of the chains
    against the reference's, and SMS-GHMC's acceptance rate, each against h."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(12.5, 3.4))
    a_h, b_h = [], []  # the step sizes drawn in each panel
    for i, name in enumerate(SAMPLERS):
        mine = sorted((r for r in table if r["sampler"] == name), key=lambda r: r["h"])
        pts = [r for r in mine if r["p_true_error"] != "" and not stuck(r)]
        a.errorbar([r["h"] for r in pts], [r["p_true_error"] for r in pts],
                   yerr=[2 * r["p_true_error_se"] for r in pts], marker="o", capsize=2, color=f"C{i}",
                   label=f"{name} ({mine[0]['epochs_per_chain'] if mine else '?'} passes/chain)")
        a_h += [r["h"] for r in pts]
        for r in mine:
            if r["diverged"] != "" or stuck(r):
                a_h.append(r["h"])
                a.axvline(r["h"], color=f"C{i}", ls=":", label=f"{name} at h={r['h']:g}: "
                          + ("diverged" if r["diverged"] != "" else "never left the mode"))
        spread = [r for r in mine if r["spread_ratio"] != ""]
        b_h += [r["h"] for r in spread]
        b.plot([r["h"] for r in spread], [r["spread_ratio"] for r in spread], "o-", color=f"C{i}", label=name)
    a.set(xscale="log", yscale="log", xlabel="h", title="mean |p(true) - reference| (final states)")
    a.legend(fontsize=8)  # at least 8 px tall where the report page shrinks the figure
    b.axhline(1.0, color="k", ls="--", lw=0.8, label="reference")
    b.set(xscale="log", xlabel="h", title="spread of p(true) over chains / reference's")
    b.legend(fontsize=8)
    g = sorted((r for r in table if r["sampler"] == "SMS-GHMC"), key=lambda r: r["h"])
    c.plot([r["h"] for r in g], [r["acceptance"] for r in g], "o-", color="C0")
    c.set(xscale="log", ylim=(0, 1.02), xlabel="h", title="SMS-GHMC acceptance rate")
    for ax, hs in ((a, a_h), (b, b_h), (c, [r["h"] for r in g])):
        _label_steps(ax, hs)
    fig.tight_layout()
    return fig


def summary(table: list[dict]) -> str:
    """Per sampler: its smallest error among runs that sampled (left the mode) and where; the runs
    that never left the mode or diverged; SMS-GHMC's acceptance at each h; the reference's NLL."""
    parts = []
    for name in SAMPLERS:
        ok = [r for r in table if r["sampler"] == name and r["p_true_error"] != "" and not stuck(r)]
        if ok:
            best = min(ok, key=lambda r: r["p_true_error"])
            parts.append(f"{name}: smallest error {best['p_true_error']:.2e} (s.e. {best['p_true_error_se']:.1e}) "
                         f"at h = {best['h']:g}, NLL {best['nll']:.4f}, spread {best['spread_ratio']:.2f} of the "
                         f"reference's, {best['epochs_per_chain']} passes per chain")
        idle = [f"{r['h']:g}" for r in table if r["sampler"] == name and stuck(r)]
        if idle:
            parts.append(f"{name} never left the mode at h = {', '.join(idle)}")
        bad = [f"h = {r['h']:g} (step {r['diverged']})" for r in table if r["sampler"] == name and r["diverged"]]
        if bad:
            parts.append(f"{name} diverged at " + ", ".join(bad))
    acc = [f"{r['h']:g}: {r['acceptance']:.3f}" for r in sorted(table, key=lambda r: -r["h"])
           if r["sampler"] == "SMS-GHMC"]
    ref = next(r for r in table if r["sampler"] == REFERENCE)
    return ("; ".join(parts) + f". SMS-GHMC acceptance by h: {', '.join(acc)}. Reference NLL {ref['nll']:.4f} "
            f"(SMS-UBU at h = {ref['h']:g}, {ref['epochs_per_chain']} passes, time-averaged).")
