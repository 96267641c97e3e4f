"""The paper's logistic-regression experiment (Section 3.4)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from experiments.logistic import _compute as logistic
from experiments.logistic import _output as logistic_output
from experiments.logistic._compute import digits_features, fashion_features, predictive_test_functions
from integrators import MultinomialLogisticTarget
from reports.drawing import Drawing
from reports.registry import Experiment
from reports.schema import TEXT, ListOf, Record, from_dataclass
from reports.verdict import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict

ORDER = 40  # its place in the registry, the list and the report


def units(preset: str) -> list[dict]:
    """The independent units of work of the logistic-regression experiment.

    One per scheme and plan (``{"scheme", "plan"}``).
    """
    return [{"scheme": s, "plan": p} for s, p in logistic.SAMPLERS]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    """Compute one unit: the rows of the scheme and plan over the step sizes, and the data's source."""
    x_train, y_train, x_test, y_test, source = logistic.load_data(preset, None, 0)
    target = MultinomialLogisticTarget(x_train, y_train, n_classes=10, prior_precision=logistic.PRIOR_PRECISION)
    rows = logistic.run_sampler(target, (np.ascontiguousarray(x_test), y_test), unit["scheme"], unit["plan"],
                                preset, seed)  # the unit's seed (store.unit_seed), unreduced
    return {"rows": [asdict(r) for r in rows], "data": source}


def draw(results: list, preset: str) -> Drawing:
    """What the report shows of the logistic-regression experiment: its figures, tables and measured numbers."""
    rows = [logistic.Row(**r) for _, res in results for r in res["rows"]]
    table = [{k: v for k, v in asdict(r).items() if k != "seconds"} for r in rows]
    h0 = max(r.h for r in rows)
    biases = logistic_output.bias_at(rows, h0)
    order = sorted(biases, key=biases.get)
    diverged = [f"{name} at h = {', '.join(f'{h:g}' for h in hs)}"
                for name, hs in logistic_output.diverged_step_sizes(rows).items()]
    return Drawing(
        figures={"logistic": logistic_output.plot(rows)},
        tables={"logistic": table, "logistic_ordering": logistic_output.ordering(rows)},
        metadata={"data": results[0][1]["data"], "batch_size": logistic.BATCH_SIZE,
                  "prior_precision": logistic.PRIOR_PRECISION, "gamma": logistic.PRESETS[preset]["gamma"],
                  "control_variate": "L-BFGS mode",
                  "baoab_friction": "gamma / 2 (the paper's listing: O step with exp(-gamma h / 2))",
                  "sms_ubu_ordering": logistic_output.ordering_summary(rows)},
        measured=(f"Data: {results[0][1]['data']}; gamma = 1, BAOAB at the paper's friction gamma/2. "
                  f"Samplers by mean |bias| at h = {h0:g} (smallest "
                  f"first): {', '.join(f'{n} {biases[n]:.2e}' for n in order)}. Diverged: "
                  f"{'; '.join(diverged) or 'none'}. Where SMS-UBU stands at each h "
                  f"(bias gap to the next sampler against twice its standard error): "
                  f"{logistic_output.ordering_summary(rows)}."))


def verdict(results: list, preset: str) -> Verdict:
    """The bias part of the claim, at each step size (:func:`experiments.logistic._output.ordering`): SMS-UBU's
    mean |bias| below every other sampler's by more than two combined standard errors.  Holds where it is so at
    every h; does not hold where another sampler is significantly below it at some h (or SMS-UBU diverged);
    otherwise (smallest only within noise) not testable at this preset.  Calibration is shown, not judged."""
    rows = [logistic.Row(**r) for _, res in results for r in res["rows"]]
    order = logistic_output.ordering(rows)
    words = [o["verdict"] for o in order]
    if any(w in ("not smallest", "diverged", "absent") for w in words):
        outcome = DOES_NOT_HOLD
    elif all(w == "smallest" for w in words):
        outcome = HOLDS
    else:
        outcome = NOT_TESTABLE
    return Verdict(outcome, "SMS-UBU's mean |bias| of p(true class) significantly (2 s.e.) the smallest at every h "
                   "(the calibration part is shown, not judged)", logistic_output.ordering_summary(rows))


# a diverged sampler's row holds NaN in each of its measurements (its `diverged` says where)
_NAN_WHEN_DIVERGED = ("bias", "bias_se", "floor", "bias_rms", "p_true", "accuracy", "nll", "ace", "rps")

EXPERIMENT = Experiment(
    ID="logistic",
    TITLE="Bayesian multinomial logistic regression: bias and calibration against h",
    CLAIM="SMS-UBU has the smallest bias of the posterior probability of the true class, significantly smaller "
          "than the BAOAB and EM samplers, and the best calibration at the largest step sizes (paper, "
          "Section 3.4, Figure 2; there on Fashion-MNIST).",
    COST={"tiny": ("~25 s on a machine's first run, mostly compiling, kept on disk for later runs (embedded digits, "
                   "PCA 8, h = 1/16 and 1/32)"),
          "quick": "~1 min (embedded digits, PCA 16, h = 1/16 .. 1/128)",
          "full": "~15 min, estimated from the quick preset (embedded digits, 64 features, h = 1/16 .. 1/256)"},
    PRESETS=tuple(logistic.PRESETS),  # its own tiny level (make demo): PCA 8, 400 points, h = 1/16 and 1/32
    RESULT=Record(data=TEXT, rows=ListOf(from_dataclass(logistic.Row, nonfinite=_NAN_WHEN_DIVERGED))),
    units=units,
    run_unit=run_unit,
    draw=draw,
    verdict=verdict,
)

__all__ = ["EXPERIMENT", "digits_features", "fashion_features", "predictive_test_functions"]
