"""Every figure judges its claim from its own numbers (``Experiment.verdict``), and the report prints that
one verdict atop the figure's section, in the contents and in the claims section's table."""

from __future__ import annotations

import pytest

from reports import _cli as cli
from reports import registry
from reports._report import write_report
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, OUTCOMES, Verdict

FAST = "tests.report_fixtures.fast_units"


@pytest.mark.parametrize("module", registry.DEFAULT_MODULES)
def test_every_registered_experiment_declares_a_verdict(module):
    assert callable(registry.declared_by(module).verdict), f"{module} declares no verdict(results, preset)"


@pytest.mark.parametrize("module", registry.DEFAULT_MODULES)
def test_the_report_prints_each_figures_verdict_atop_its_section_in_the_contents_and_the_claims_table(
        tmp_path, module):
    figures = {m: registry.declared_by(m) for m in registry.DEFAULT_MODULES}
    verdicts = {m: Verdict(OUTCOMES[i % 3], f"rule of {m}", f"numbers of {m}") for i, m in enumerate(figures)}
    drawn = {exp.ID: {"module": exp, "info": {"files": [], "measured": "m.", "verdict": verdicts[m]}, "meta": {},
                      "wall": 0.0} for m, exp in figures.items()}
    write_report(tmp_path, drawn, "tiny")
    fid, verdict = figures[module].ID, verdicts[module]
    md = (tmp_path / "index.md").read_text()
    section = md.split(f"<a id='{fid}'></a>")[1].split("<a id=")[0]
    first = [line for line in section.splitlines() if line.strip()][1]  # the line under the heading
    assert first == f"**Verdict: {verdict.outcome}: rule of {module} (numbers of {module})**", first
    assert f"{figures[module].TITLE} ({verdict.outcome})](#{fid})" in md
    if "claims" in drawn:
        claims = md.split("<a id='claims'></a>")[1].split("<a id=")[0]
        assert f"| {figures[module].TITLE} | rule of {module} | numbers of {module} | {verdict.outcome} |" in claims
    page = (tmp_path / "index.html").read_text()
    assert f"<b>Verdict: {verdict.outcome}</b>" in page.split(f"<h2 id='{fid}'>")[1].split("<h2")[0]


def test_a_figure_that_declares_no_verdict_says_so_in_its_section(tmp_path, monkeypatch):
    monkeypatch.setenv("SMS_LANGEVIN_REPORT_MODULES", FAST)
    assert cli.main(["run", "all", "--preset", "quick", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "report" / "index.md").read_text()
    assert f"**Verdict: {NOT_TESTABLE}: {FAST} declares no verdict for its claim**" in md


def test_a_verdict_has_one_of_three_outcomes_and_a_reason():
    with pytest.raises(ValueError, match="outcome"):
        Verdict("fine", "a reason")
    with pytest.raises(ValueError, match="reason"):
        Verdict(HOLDS, " ")


@pytest.mark.parametrize("fields, words", [
    ({"outcome": ["holds"]}, "outcome must be one of"),
    ({"reason": ["a", "list"]}, "reason must be a string"),
    ({"reason": None}, "reason must be a string"),
    ({"numbers": 3.5}, "numbers must be a string"),
])
def test_a_verdicts_fields_of_the_wrong_kind_are_refused_naming_the_field(fields, words):
    with pytest.raises(ValueError, match=words):
        Verdict(**{"outcome": HOLDS, "reason": "a reason", **fields})


def _ghmc_row(sampler, h, err, se=1e-3):
    return {"sampler": sampler, "h": h, "p_true_error": err, "p_true_error_se": se, "spread_ratio": 1.0}


@pytest.mark.parametrize(("ghmc_rows", "outcome"), [
    # SMS-GHMC's smallest error more than 2 combined s.e. below SMS-UBU's at a comparable step: the claim's opposite
    ([_ghmc_row("SMS-GHMC", 0.04, 3e-2), _ghmc_row("SMS-GHMC", 0.01, 1.0e-2)], DOES_NOT_HOLD),
    # below SMS-UBU's at a comparable step but within 2 combined s.e. (the tiny preset's numbers): noise decides
    ([_ghmc_row("SMS-GHMC", 0.04, 3e-2), _ghmc_row("SMS-GHMC", 0.01, 1.32e-2, se=3.1e-3)], NOT_TESTABLE),
    ([_ghmc_row("SMS-GHMC", 0.01, 1.45e-2)], NOT_TESTABLE),  # above it, within 2 s.e.
    # it reaches SMS-UBU's error only at a step 8x smaller
    ([_ghmc_row("SMS-GHMC", 0.01, 3e-2), _ghmc_row("SMS-GHMC", 0.002, 1.40e-2)], HOLDS),
    ([_ghmc_row("SMS-GHMC", 0.01, 3e-2)], HOLDS),  # never reaches it
])
def test_the_ghmc_verdict_says_when_ghmc_matches_ubu_at_a_comparable_step(monkeypatch, ghmc_rows, outcome):
    from experiments import ghmc
    table = [_ghmc_row("SMS-UBU", 0.0625, 2e-2), _ghmc_row("SMS-UBU", 0.015625, 1.39e-2), *ghmc_rows]
    monkeypatch.setattr(ghmc.ghmc_logistic, "rows", lambda results: table)
    verdict = ghmc.EXPERIMENT.verdict([], "tiny")
    assert verdict.outcome == outcome, verdict
    assert "1.39e-02" in verdict.numbers


_GHMC_BRANCHES = {  # SMS-GHMC's rows beside SMS-UBU's, one per branch of the verdict
    "beats it at a comparable step": [_ghmc_row("SMS-GHMC", 0.04, 3e-2), _ghmc_row("SMS-GHMC", 0.01, 1.0e-2)],
    "matches it within noise at a comparable step": [_ghmc_row("SMS-GHMC", 0.01, 1.32e-2, se=3.1e-3)],
    "reaches it only at a much smaller step": [_ghmc_row("SMS-GHMC", 0.002, 1.40e-2)],
    "never reaches it": [_ghmc_row("SMS-GHMC", 0.01, 3e-2)],
    "never sampled": [{**_ghmc_row("SMS-GHMC", 0.01, 3e-2), "spread_ratio": 0.0}],
}


@pytest.mark.parametrize("branch", list(_GHMC_BRANCHES))
def test_the_ghmc_verdict_reads_as_a_well_formed_sentence_on_every_branch(monkeypatch, branch):
    import re

    from experiments import ghmc
    table = [_ghmc_row("SMS-UBU", 0.0625, 2e-2), _ghmc_row("SMS-UBU", 0.015625, 1.39e-2), *_GHMC_BRANCHES[branch]]
    monkeypatch.setattr(ghmc.ghmc_logistic, "rows", lambda results: table)
    text = ghmc.EXPERIMENT.verdict([], "tiny").reason
    assert "no much" not in text and "needs no" not in text, text
    assert re.fullmatch(r"SMS-GHMC [^\s].*[\w)]", text), text  # a sentence on SMS-GHMC, no trailing punctuation
    assert not re.search(r"\s{2}|\s[,.:;)]|\(\s|\b(\w+) \1\b", text), text  # no doubled space or word
    assert text.count("(") == text.count(")"), text


@pytest.mark.parametrize(("sms_order", "outcome"), [(2.0, HOLDS), (1.0, DOES_NOT_HOLD)])
def test_the_demo_verdict_reads_the_slopes_of_the_bias(sms_order, outcome):
    from experiments import demo
    hs = (0.25, 0.125, 0.0625, 0.03125)
    results = [({}, {"row": {"sampler": name, "h": h, "variance_bias": 0.3 * h ** order, "variance_se": 1e-6}})
               for name, order in (("SMS-UBU", sms_order), ("SG-UBU", 1.0)) for h in hs]
    assert demo.EXPERIMENT.verdict(results, "tiny").outcome == outcome


def test_the_demo_verdict_is_not_testable_where_the_bias_is_below_noise():
    from experiments import demo
    results = [({}, {"row": {"sampler": name, "h": h, "variance_bias": 1e-4, "variance_se": 1e-3}})
               for name in ("SMS-UBU", "SG-UBU") for h in (0.25, 0.125)]
    assert demo.EXPERIMENT.verdict(results, "tiny").outcome == NOT_TESTABLE


def test_the_bnn_verdict_names_an_absent_data_set_once_with_its_count_of_units():
    from experiments import bnn
    why = "pneumoniamnist (full): pneumoniamnist.npz not found (looked in data/; --data-dir FOLDER)"
    results = [({"dataset": "pneumoniamnist", "run": i}, {"missing": why}) for i in range(64)]
    results.append(({"dataset": "celeba", "run": 0}, {"missing": "celeba (full): not found"}))
    verdict = bnn.EXPERIMENT.verdict(results, "full")
    assert verdict.outcome == NOT_TESTABLE
    assert verdict.numbers.count(why) == 1 and f"data absent for 64 units ({why})" in verdict.numbers, verdict
    assert "celeba: data absent for 1 unit (" in verdict.numbers


def test_the_claims_tables_measured_line_and_verdict_count_the_same_rows():
    from experiments import claims
    from theory_checks import _claims
    cells = {"source": "-", "expected": "-", "measured": "|bias| 0.1", "uncertainty": "-"}
    rows = [{"claim": f"c{i}", "verdict": _claims.HOLDS, **cells} for i in range(28)] \
        + [{"claim": f"n{i}", "verdict": _claims.NOT_ASSERTED, **cells} for i in range(9)]
    results = [({}, {"rows": rows})]
    measured, verdict = claims.EXPERIMENT.draw(results, "quick").measured, claims.EXPERIMENT.verdict(results, "quick")
    assert measured == "37 rows measured: 28 claims, all hold; 9 without a claim.", measured
    assert verdict.outcome == HOLDS and verdict.numbers == measured.rstrip("."), verdict
    assert r"\|bias\| 0.1" in claims.EXPERIMENT.draw(results, "quick").texts["claims.md"]  # a pipe kept, escaped
    one = [({}, {"rows": [{"claim": "c", "verdict": _claims.FAILS}]})]
    assert claims.EXPERIMENT.verdict(one, "quick").numbers == "1 row measured: 1 claim, 0 hold; 0 without a claim"


def test_the_conformance_verdict_counts_in_the_singular_where_there_is_one():
    from experiments import conformance
    control = {"sampler": "planted.x", "target": "default", "library": "planted", "plans": {}, "checks": []}
    numbers = conformance.EXPERIMENT.verdict([({}, control)], "tiny").numbers
    assert "1 positive control" in numbers and "1 positive controls" not in numbers, numbers
    assert "0 library samplers" in numbers, numbers
