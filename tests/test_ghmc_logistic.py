"""The SMS-GHMC comparison of the supplement (section D): units, the error against the reference
and its jackknife standard error, the table and figure, and one real run at a micro size."""

import csv

import numpy as np
import pytest
from helpers import draw_files
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.ghmc import EXPERIMENT as fig_ghmc
from experiments.ghmc import _compute as ghmc_logistic
from reports import registry, schema

pytestmark = [pytest.mark.slow, pytest.mark.experiment]


@settings(max_examples=30, deadline=None)
@given(c=st.integers(2, 9), n=st.integers(1, 12), seed=st.integers(0, 2**31))
def test_jackknife_se_is_the_classical_se_when_the_error_is_linear_in_the_chains(c, n, seed):
    """Chains all above the reference: the error is the mean over chains of each chain's mean excess,
    so its jackknife standard error is exactly std(ddof=1) / sqrt(C) of those excesses."""
    rng = np.random.default_rng(seed)
    p_ref = rng.uniform(0.0, 0.5, size=n)
    chains = p_ref + rng.uniform(0.01, 0.5, size=(c, n))
    err, se = ghmc_logistic.jackknife_error(chains, p_ref)
    excess = (chains - p_ref).mean(axis=1)
    assert err == pytest.approx(excess.mean(), rel=1e-12)
    assert se == pytest.approx(excess.std(ddof=1) / np.sqrt(c), rel=1e-9, abs=1e-15)


def test_units_cover_both_samplers_at_every_step_and_one_reference():
    for preset, cfg in ghmc_logistic.PRESETS.items():
        units = ghmc_logistic.units(preset)
        assert [u["h"] for u in units if u["sampler"] == "SMS-GHMC"] == list(cfg["ghmc_h"])
        assert [u["h"] for u in units if u["sampler"] == "SMS-UBU"] == list(cfg["ubu_h"])
        assert sum(u["sampler"] == "reference" for u in units) == 1
    assert "experiments.ghmc" in registry.DEFAULT_MODULES
    assert registry.module_preset(fig_ghmc, "tiny") == "tiny"  # its own cheap level in make demo
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        ghmc_logistic.units("huge")


def _fake(sampler, h, probs, chain_p_true=None, diverged=None, acceptance=None):
    out = {"sampler": sampler, "h": h, "epochs_per_chain": 10, "chains": 0 if probs is None else 3,
           "probs": probs, "diverged": diverged, "labels": [0, 1, 1], "data": "fake"}
    if chain_p_true is not None:
        out["chain_p_true"] = chain_p_true
    if acceptance is not None:
        out["acceptance"] = acceptance
    return out


def test_table_scores_against_the_reference_and_reports_divergence_and_stuck_chains(tmp_path):
    ref = [[0.7, 0.3], [0.2, 0.8], [0.4, 0.6]]
    p_true = np.array([0.7, 0.8, 0.6])
    spread = [p_true + 0.05, p_true - 0.05, p_true]
    results = [_fake("reference", 0.01, ref, chain_p_true=[p_true + 0.1, p_true - 0.1, p_true]),
               _fake("SMS-UBU", 0.1, ref, chain_p_true=spread),  # mean equal to the reference: no error
               _fake("SMS-GHMC", 0.1, ref, chain_p_true=[p_true + 0.1] * 3, acceptance=0.0),  # never moved
               _fake("SMS-GHMC", 0.05, ref, chain_p_true=[s + 0.02 for s in spread], acceptance=0.6),
               _fake("SMS-GHMC", 0.4, None, chain_p_true=[], diverged=17, acceptance=0.0)]
    info = draw_files(fig_ghmc, [({"sampler": r["sampler"]}, r) for r in results], "tiny", tmp_path)
    for name in info["files"]:
        assert (tmp_path / name).exists(), name
    rows = {(r["sampler"], float(r["h"])): r for r in csv.DictReader(open(tmp_path / "ghmc.csv"))}
    assert float(rows[("SMS-UBU", 0.1)]["p_true_error"]) == pytest.approx(0.0, abs=1e-15)
    assert float(rows[("SMS-UBU", 0.1)]["spread_ratio"]) == pytest.approx(0.5)
    assert float(rows[("SMS-GHMC", 0.05)]["p_true_error"]) == pytest.approx(0.02)
    assert float(rows[("SMS-GHMC", 0.1)]["p_true_error"]) == pytest.approx(0.1)
    assert float(rows[("SMS-GHMC", 0.1)]["spread_ratio"]) == pytest.approx(0.0, abs=1e-12)
    assert rows[("SMS-GHMC", 0.4)]["nll"] == "" and rows[("SMS-GHMC", 0.4)]["diverged"] == "17"
    assert float(rows[("reference", 0.01)]["nll"]) == pytest.approx(-np.mean(np.log(p_true)))
    measured = info["measured"]
    assert "SMS-GHMC diverged at h = 0.4 (step 17)" in measured
    assert "SMS-GHMC never left the mode at h = 0.1" in measured
    assert "SMS-GHMC: smallest error 2.00e-02" in measured  # the run that sampled, not the one that stayed


def test_micro_run_gives_acceptance_and_errors_within_the_monte_carlo_noise(monkeypatch):
    """A real run (digits, PCA 8): SMS-GHMC at a small step accepts almost always and, like SMS-UBU,
    ends within a few standard errors of the reference (each chain's final state is a posterior
    draw; the reference's own error is small against that noise)."""
    micro = {"data": "tiny", "n_chains": 6, "n_iter": 6, "n_sweeps": 4, "alpha": 0.7, "ghmc_h": (0.01,),
             "ubu_h": (2.0**-5,), "ref_chains": 4, "ref_epochs": 100}
    monkeypatch.setitem(ghmc_logistic.PRESETS, "micro", micro)
    results = [ghmc_logistic.run_unit(u, "micro", seed=3) for u in ghmc_logistic.units("micro")]
    for result in results:
        schema.check(result, fig_ghmc.RESULT)
    table = {r["sampler"]: r for r in ghmc_logistic.rows(results)}
    assert 0.8 < table["SMS-GHMC"]["acceptance"] <= 1.0
    assert table["SMS-UBU"]["epochs_per_chain"] == table["SMS-GHMC"]["epochs_per_chain"] == 2 * 4 * 6
    for name in ghmc_logistic.SAMPLERS:
        row = table[name]
        assert row["chains"] == 6 and row["diverged"] == "" and row["spread_ratio"] > ghmc_logistic.STUCK
        # a predictive averaged over 6 draws sits about sd/sqrt(6) from the posterior predictive
        chains = np.array(next(r for r in results if r["sampler"] == name)["chain_p_true"])
        floor = np.mean(chains.std(axis=0, ddof=1)) / np.sqrt(6)
        assert row["p_true_error"] < 3 * floor + 0.01, (name, row["p_true_error"], floor)
        assert 0.5 < row["accuracy"] <= 1.0
