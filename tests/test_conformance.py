"""The conformance report (:mod:`experiments.conformance`, :mod:`theory_checks.adapters._conformance`):
the toolkit's exact lines have the orders the design declares, the measured order is read as the
interval allows, a sampler whose library is absent is skipped by name, and a measured toy sampler
goes through the report's unit, persisted form and drawing."""

import json

import numpy as np
import pytest
from helpers import ToyULA, draw_files

from experiments import conformance as fig_conformance
from theory_checks._verify import default_target
from theory_checks.adapters import _conformance as conformance
from theory_checks.adapters._analysis import SLOPE_TOL
from theory_checks.adapters._protocol import missing_library
from theory_checks.adapters._runs import LEVELS, critical_friction

pytestmark = [pytest.mark.slow, pytest.mark.experiment]


def slope(ladder) -> float:
    hs, errors = np.array(ladder["hs"]), np.array(ladder["errors"], dtype=float)
    return float(np.polyfit(np.log(hs[:4]), np.log(errors[:4]), 1)[0])  # the four finest step sizes


def test_toolkit_lines_have_the_declared_orders_on_the_default_target():
    target = default_target()
    lines = conformance.toolkit_ladders(target, gamma=critical_friction(target), hs=0.1 * 2.0 ** -np.arange(6))
    assert abs(slope(lines["ubu"]["full"]) - 2) < 0.1
    assert abs(slope(lines["ubu"]["sms"]) - 2) < 0.1
    assert abs(slope(lines["ubu"]["iid"]) - 1) < 0.1
    assert abs(slope(lines["baoab"]["sms"]) - 2) < 0.1
    assert max(lines["baoab"]["full"]["errors"]) < fig_conformance.EXACT  # BAOAB's x-law is exact


def plan_record(lo, hi, slope_value=1.0):
    return {"hs": [0.1, 0.05, 0.025], "errors": [0.1, 0.05, 0.025], "noise": [0.001] * 3, "n_chains": [100] * 3,
            "slope": slope_value, "ci": [lo, hi], "fit": [0, 1, 2], "b0_max": 0.0, "expected": 1.0,
            "asserted": True}


def record_with(plans, *, limit_failed=(), exact=False):
    checks = [{"name": f"limit[{p}]", "passed": p not in limit_failed, "expected": "", "measured": "",
               "verdict": ""} for p in plans]
    checks.append({"name": "weak_order[full]", "passed": True, "expected": "", "measured": "", "verdict": ""})
    return {"plans": plans, "checks": checks, "exact_gaussian_x": exact}


@pytest.mark.parametrize("lo, hi, expected", [
    (0.9, 1.2, "1"), (1.8, 2.1, "2"), (1.1, 1.9, "inconclusive"), (-0.5, 1.5, "inconclusive"),
    (1.0 + 2 * SLOPE_TOL, 1.6 + 2 * SLOPE_TOL, "2"), (0.0, 2.0 - SLOPE_TOL - 0.01, "inconclusive")])
def test_order_class_reads_the_interval(lo, hi, expected):
    assert conformance.order_class(record_with({"sms": plan_record(lo, hi)}), "sms") == expected


def test_order_class_names_a_missing_limit_an_exact_law_and_no_slope():
    rec = record_with({"full": plan_record(0.9, 1.1), "iid": plan_record(0.9, 1.1),
                       "sms": {**plan_record(None, None, None), "fit": []},
                       "rr": {**plan_record(None, None, None), "fit": [2]}},
                      limit_failed=("iid",), exact=True)
    assert [conformance.order_class(rec, p) for p in ("full", "iid", "sms", "rr", "none")] == \
        ["exact", "no limit", "below noise", "no slope (one step size above noise)", "not measured"]
    assert conformance.sms_effect(rec).startswith("undecided")
    rec = record_with({"iid": plan_record(0.9, 1.2), "sms": plan_record(1.8, 2.2)})
    assert conformance.sms_effect(rec) == "changes its order from 1 to 2"


class Absent(ToyULA):
    NAME = "toy.absent"
    LIBRARY = "absent"

    def build(self, problem, h, gamma):
        raise missing_library("Absent", "absent==1.0")


def test_report_skips_an_absent_library_by_name_and_draws_a_measured_sampler(tmp_path, monkeypatch):
    monkeypatch.setattr(conformance, "conformance_adapters", lambda: {"toy.ula": ToyULA(), "toy.absent": Absent()})
    monkeypatch.setitem(fig_conformance.LEVEL, "tiny", LEVELS["tiny"])
    units = [{"sampler": "toolkit", "target": "default"}, {"sampler": "toy.ula", "target": "default"},
             {"sampler": "toy.absent", "target": "default"}]
    run_unit = fig_conformance.EXPERIMENT.run_unit
    results = [(u, json.loads(json.dumps(run_unit(u, "tiny", 3)))) for u in units]  # persisted form
    assert "absent==1.0" in results[2][1]["skipped"]
    drawn = draw_files(fig_conformance.EXPERIMENT, results, "tiny", tmp_path)
    assert all((tmp_path / f).stat().st_size > 0 for f in drawn["files"])
    assert "toy.absent" in drawn["measured"] and "toy.ula on default" in drawn["measured"]
    rows = (tmp_path / "conformance.csv").read_text().splitlines()
    assert len(rows) == 1 + 4 and rows[1].startswith("toy.ula,toy,default,full")
    assert rows[0] == ",".join(fig_conformance.ROW_COLUMNS)  # the declared header is every key a row has
    points = (tmp_path / "conformance_points.csv").read_text().splitlines()
    assert points[0] == ",".join(fig_conformance.POINT_COLUMNS)
    points = (tmp_path / "conformance_points.csv").read_text()
    assert "toolkit.ubu,exact oracle,default,sms" in points and "toy.ula,measured,default,iid" in points


def test_with_no_library_sampler_measured_the_table_is_its_header_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(conformance, "conformance_adapters", lambda: {"toy.absent": Absent()})
    units = [{"sampler": "toolkit", "target": "default"}, {"sampler": "toy.absent", "target": "default"}]
    run_unit = fig_conformance.EXPERIMENT.run_unit
    results = [(u, json.loads(json.dumps(run_unit(u, "tiny", 3)))) for u in units]
    draw_files(fig_conformance.EXPERIMENT, results, "tiny", tmp_path)
    assert (tmp_path / "conformance.csv").read_text().splitlines() == [",".join(fig_conformance.ROW_COLUMNS)]


def test_every_preset_lists_toolkit_lines_and_known_samplers():
    names = set(conformance.conformance_adapters())
    for preset in fig_conformance.EXPERIMENT.PRESETS:
        units = fig_conformance.EXPERIMENT.units(preset)
        assert {u["sampler"] for u in units} - {"toolkit"} <= names
        assert {u["target"] for u in units if u["sampler"] == "toolkit"} == set(fig_conformance.TARGETS[preset])
    tiny = fig_conformance.tiny_samplers()
    assert {conformance.conformance_adapters()[n].LIBRARY for n in tiny} == {"posteriors", "blackjax", "planted"}
    assert len(tiny) == 3


def control_record(level, limit_passed, verdict, failed=()):
    return {"sampler": "planted.sghmc_noise_x1.02", "library": "planted", "target": "default",
            "target_label": "gaussian (d=2)", "level": level, "failed": list(failed), "ok": False,
            "positive_control": True, "plans": {},
            "checks": [{"name": "limit[full]", "passed": limit_passed, "expected": "", "measured": "",
                        "verdict": verdict}]}


def test_a_positive_control_is_reported_detected_or_not_with_the_reason():
    """A level that cannot detect the planted error says so in the table and the drawing's text,
    instead of passing it; a detected control names the failed check."""
    blind = control_record("tiny", None, "INCONCLUSIVE (cannot detect a limit error of 0.04 with se 0.02)")
    caught = control_record("quick", False, "FAIL", failed=["limit[full]"])
    assert conformance.control_verdict(blind) == "NOT DETECTED: level tiny cannot detect a limit error of 0.04 " \
                                                 "with se 0.02"
    assert conformance.control_verdict(caught) == "detected (FAILED: limit[full])"
    missed = control_record("quick", True, "pass")
    assert conformance.control_verdict(missed).startswith("NOT DETECTED: every limit check passed")
    table = conformance.conformance_table([blind, caught])
    assert "positive control planted.sghmc_noise_x1.02 on gaussian: NOT DETECTED: level tiny cannot detect" in table
    note = fig_conformance.control_note([blind])
    assert note.startswith("Positive controls:") and "NOT DETECTED" in note
    assert fig_conformance.control_note([{**blind, "library": "toy", "positive_control": False}]) == ""


def test_the_positive_controls_include_one_at_the_detectable_effect():
    from theory_checks.adapters._analysis import DETECTABLE_LIMIT
    factors = sorted(a.noise_factor for a in conformance.positive_controls().values())
    assert factors == [1.02, 1.05] and abs(factors[0] ** 2 - 1 - DETECTABLE_LIMIT) < 0.001


def measured_record(plans, *, failed=(), inconclusive=()):
    return {**record_with(plans), "sampler": "toy.ula", "library": "toy", "target": "default", "rule_order": 1.0,
            "rule_source": "toy", "gamma": 1.0, "level": "tiny", "ok": not failed and not inconclusive,
            "failed": list(failed), "inconclusive": list(inconclusive), "positive_control": False}


def test_the_measured_line_says_failed_only_for_checks_that_failed():
    """A sampler whose checks were inconclusive (none failed) reads "inconclusive: <names>", never "FAILED: "."""
    plans = {"sms": plan_record(0.9, 1.2)}
    toolkit = {"sampler": "toolkit", "target": "default", "gamma": 1.0,
               "ladders": {"ubu": {"sms": {"hs": [0.1, 0.05], "errors": [0.01, 0.0025]}}}}
    unsure = measured_record(plans, inconclusive=["weak_order[sms]", "limit[sms]"])
    text = fig_conformance.draw([({}, toolkit), ({}, unsure)], "tiny").measured
    assert "(inconclusive: weak_order[sms], limit[sms])" in text and "FAILED" not in text
    both = measured_record(plans, failed=["limit[sms]"], inconclusive=["weak_order[sms]"])
    assert fig_conformance.checks_left(both) == " (FAILED: limit[sms]; inconclusive: weak_order[sms])"
    assert fig_conformance.checks_left(measured_record(plans)) == ""


def test_the_figure_fills_points_above_noise_and_names_a_slope_only_where_fitted():
    import matplotlib.pyplot as plt

    fitted = {**plan_record(0.9, 1.2), "errors": [0.1, 0.05, 0.002], "fit": [0, 1]}  # the last within the noise
    unfitted = {**plan_record(None, None, None), "errors": [0.002, 0.0, 0.001], "fit": []}
    toolkit = {"sampler": "toolkit", "target": "default", "gamma": 1.0,
               "ladders": {"ubu": {p: {"hs": [0.1, 0.05], "errors": [0.01, 0.0025]} for p in ("iid", "sms")}}}
    rec = measured_record({"iid": fitted, "sms": unfitted})
    fig = fig_conformance.plot([rec], [toolkit], [])
    iid, sms = fig.axes[:2]
    labels = {ax: [t.get_text() for t in ax.get_legend().get_texts()] for ax in (iid, sms)}
    assert labels[iid] == ["toolkit UBU (exact oracle)", "toy.ula, slope 1.00"]
    assert labels[sms] == ["toolkit UBU (exact oracle)", "toy.ula"]
    assert iid.get_legend().get_title().get_text() == "sampler"
    hollow = {ax: [tuple(line.get_xdata()) for line in ax.lines if line.get_markerfacecolor() == "white"]
              for ax in (iid, sms)}
    assert hollow[iid] == [(0.025,)] and hollow[sms] == [(0.1, 0.025)]  # the zero bias is not drawn
    measured = next(line for line in iid.lines if line.get_label() == "toy.ula, slope 1.00")
    assert list(measured.get_markevery()) == [0, 1]
    assert "hollow: within the noise" in fig.texts[0].get_text()
    plt.close(fig)


def test_skipped_samplers_are_named_by_why_planted_controls_apart_from_library_samplers():
    """A planted control wraps a library sampler: skipped with it, it is named as such, not as a library."""
    from experiments.conformance import skipped_note

    why = "posteriors not installed"
    note = skipped_note([{"sampler": "posteriors.sghmc", "skipped": why},
                         {"sampler": "planted.sghmc_noise_x1.02", "skipped": why}])
    assert note == ("Skipped, library not installed: posteriors.sghmc; planted control skipped with the library it "
                    f"wraps: planted.sghmc_noise_x1.02 ({why}).")
    assert "library not installed" not in skipped_note([{"sampler": "planted.a", "skipped": why},
                                                        {"sampler": "planted.b", "skipped": why}])
    assert skipped_note([]) == ""
