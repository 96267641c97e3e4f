"""The tour's exercise checker: ``check(exercise_id, answer)`` says right or wrong, with a hint when
wrong, and never prints the answer.

Answers are not stored in readable form.  An exercise is one of

* ``Hashed``: a number (or a word) whose grid cell ``round(answer / tol)`` (or normalized text) is
  stored as a salted SHA-256 digest; the digests of the neighbouring cells are stored too, so an
  answer within ``tol`` of the truth passes (and one more than ``2 tol`` away never does);
* ``Computed``: the right answer is computed by the toolkit itself when the student asks (for
  instance the exact stationary variance of a scheme from the oracle), then compared within a
  relative tolerance.

``digest(exercise_id, value)`` gives the stored digest of a value (for authors adding exercises).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

SALT = "sms-langevin tour"


def _cell_key(exercise_id: str, cell) -> str:
    return hashlib.sha256(f"{SALT}|{exercise_id}|{cell}".encode()).hexdigest()[:24]


def _normalize(text: str) -> str:
    return "".join(ch for ch in str(text).lower() if ch.isalnum())


def digest(exercise_id: str, value, *, tol: float | None = None) -> tuple[str, ...]:
    """Digests stored for ``value``: of its normalized text (``tol=None``), or of the grid cells
    ``round(value / tol) - 1 .. + 1`` (a numeric answer within ``tol`` lands in one of them)."""
    if tol is None:
        return (_cell_key(exercise_id, _normalize(value)),)
    cell = round(float(value) / tol)
    return tuple(_cell_key(exercise_id, c) for c in (cell - 1, cell, cell + 1))


def _as_number(exercise_id: str, answer) -> float:
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        try:  # numpy scalars and 1-element arrays
            answer = float(answer)
        except (TypeError, ValueError):
            raise ValueError(f"exercise {exercise_id!r} expects a number, got {answer!r}") from None
    answer = float(answer)
    if not math.isfinite(answer):
        raise ValueError(f"exercise {exercise_id!r} expects a finite number, got {answer!r}")
    return answer


@dataclass(frozen=True)
class Hashed:
    """An answer stored as digests: numeric within ``tol`` (``tol=None``: a word)."""

    question: str
    hint: str
    digests: tuple[str, ...]
    tol: float | None = None

    def is_right(self, exercise_id: str, answer) -> bool:
        if self.tol is None:
            return _cell_key(exercise_id, _normalize(answer)) in self.digests
        value = _as_number(exercise_id, answer)
        return _cell_key(exercise_id, round(value / self.tol)) in self.digests


@dataclass(frozen=True)
class Computed:
    """An answer the toolkit computes on demand (``truth()``), right within ``rel_tol``."""

    question: str
    hint: str
    truth: Callable[[], float]
    rel_tol: float = 1e-3

    def is_right(self, exercise_id: str, answer) -> bool:
        value = _as_number(exercise_id, answer)
        truth = float(self.truth())
        return abs(value - truth) <= self.rel_tol * max(abs(truth), 1e-300)


def _oracle_variance_ratio(scheme: str, plan: str, h: float, batch_size=None) -> Callable[[], float]:
    def truth() -> float:
        from integrators import GaussianTarget
        from theory_checks.oracle import stationary_moments
        target = GaussianTarget.one_d_example()
        moments = stationary_moments(target, scheme, plan, h, 1.0, batch_size)
        return float(moments.variance[0] / target.covariance[0, 0])
    return truth


def _w1_normals() -> float:
    return 0.1 * math.sqrt(2.0 / math.pi)  # W1(N(0, 1), N(0, 1.1^2)) = |1 - 1.1| E|Z|


EXERCISES: dict[str, Hashed | Computed] = {
    # 1. splittings
    "1.1": Computed("Ratio of EM x full's exact stationary x-variance to the target's on the 1-D example "
                    "at h = 1/8 (gamma = 1).",
                    "Ask the oracle: stationary_moments(target, 'em', 'full', 0.125).variance, divided by "
                    "target.covariance[0, 0]. The ratio is larger than 1: EM inflates the variance.",
                    _oracle_variance_ratio("em", "full", 0.125)),
    "1.2": Hashed("Which scheme's x-marginal is exact on every Gaussian target for every stable h: "
                  "'em', 'baoab' or 'ubu'?",
                  "Plot each scheme's oracle x-variance against h: one of the three curves is flat.",
                  ("d822ddf31cd3225528016523",)),
    "1.3": Hashed("Of the step sizes h = 2^-k, k = 0, 1, 2, 3, what is the largest at which EM x full has a "
                  "stationary law on the 1-D example (give h)?",
                  "stationary_moments raises UnstableStepError where there is none; try each h from the "
                  "largest down.",
                  ("5af0f047dd47476be3e61795", "e853253559158877542f6a83", "fcf5fa5c3548ff66f50fc84a"),
                  tol=0.01),
    # 2. stochastic gradients
    "2.1": Hashed("The weak order of UBU x iid (SG-UBU): the local slope of its variance bias at small h, "
                  "rounded to the nearest half.",
                  "weak_order(target, 'ubu', 'iid', hs, batch_size=...).local_slopes: read the one at the smallest h.",
                  ("ed20253f3503df433310b072", "21a54d8ded26b206afbc4979", "e1aef19647f092d7f7773c02"),
                  tol=0.25),
    "2.2": Hashed("The weak order of UBU x sms (SMS-UBU), rounded to the nearest half.",
                  "Same call with plan='sms'; compare with plan='rr' and plan='iid'.",
                  ("b6aa4f246e25c85b9fa6b9da", "9d390801c2dda48f9e5b9daf", "707485a03a6ba0864a1fb9cb"), tol=0.25),
    "2.3": Hashed("How many steps is one period of the sms plan on the 1-D example with batch size 1?",
                  "Two data terms, batch size 1: N_m batches per epoch, and sms sweeps forward then "
                  "backward. batch_sequence('sms', 2, 1, 12) shows where the pattern repeats.",
                  ("6c609821acc0963a71d13171", "cefdbeede99100cc3df229eb", "2fa3e1ded8ed39fa8e19299e"), tol=0.5),
    # 3. telescoping
    "3.1": Hashed("Level differences E_{h/2} f - E_h f measured at h = 1/8, 1/16, 1/32 are -4.0e-3, -1.0e-3 "
                  "and -2.5e-4. Estimate the bias E_{1/8} f - E_{1/64} f.",
                  "The bias at h_0 is minus the sum of the differences at h_0 and every finer level "
                  "(TelescopingResult.bias). Mind the sign.",
                  ("945a4cca80d5884e6a65fae3", "399ec12d7f39347b603ce99c", "6f24931a1b50c589858160d0"), tol=3e-5),
    "3.2": Hashed("For a sampler of weak order 2, by what factor does each level difference shrink when h "
                  "halves?",
                  "The difference at h is about C h^p - C (h/2)^p: compare it at h and at h/2.",
                  ("8e02ca5b83a89a663f215c3c", "9101afc19a4102542357eaba", "da60d9f7b9eb1001fb9d0fc9"), tol=0.2),
    # 4. strong order
    "4.1": Hashed("The strong order of UBU x full, measured (rounded to the nearest half).",
                  "Read strong_order(RunSpec(target, 'ubu', 'full'), hs).slope, or the ratio of errors when h "
                  "halves.",
                  ("24c9ede1e6c7483b7a37f098", "2ae305f9b7728959ec0cccfd", "6fb42f688251a9f64a690481"), tol=0.25),
    "4.2": Hashed("The strong order of UBU x iid (SG-UBU), rounded to the nearest quarter.",
                  "With replacement, the force noise is a martingale: it adds up like sqrt of the number of "
                  "steps. Measure strong_order(RunSpec(target, 'ubu', 'iid', batch_size=1), hs).",
                  ("f6f6906fb0833754826ecddc", "9f33e57e112c977caf4013a7", "a9944ecbae9583c172289241"), tol=0.1),
    # 5. Figure 1
    "5.1": Computed("W1 distance between N(0, 1) and N(0, 1.1^2).",
                    "Two centered normals are the same quantile function scaled: W1 = |s1 - s2| E|Z| with "
                    "Z standard normal; bias._wasserstein.Normal and wasserstein_samples can check you.",
                    _w1_normals, rel_tol=2e-3),
    "5.2": Hashed("By what factor must the number of samples N grow to halve the Monte Carlo error of the "
                  "plain W1 estimate?",
                  "The Monte Carlo error of an average of N independent terms scales like N^(-1/2).",
                  ("666a60d31d1926624075aecc", "d04cd60a4047c09b3ddb1813", "dfecc04e20b8d4128f24cd7c"), tol=0.2),
    "5.3": Hashed("Figure 1's local slope of SG-UBU (ubu x iid), rounded to the nearest integer.",
                  "SG samplers carry an O(h) gradient-noise bias; look at local_slopes(points).",
                  ("e83d07cfecaae7101310bf82", "8f6d5e6702a767eea7ff020a", "b4448f4a84f23a12abdc5c3d"), tol=0.3),
    # 6. a Bayesian neural network
    "6.1": Hashed("The friction gamma of the localized sampler of notebook 6 (rho = 50^(-1/2)), to two decimals.",
                  "The paper ties the friction to the localization width: gamma = 1 / rho. "
                  "sampler_config.gamma holds it.",
                  ("bc6d2a742be4e03b4a63e775", "6fb04dacdbe708056ea996b2", "3f850f510b79eab0052bb5bc"), tol=0.02),
    "6.2": Hashed("The localizing term |x - x*|^2 / (2 rho^2) adds the same curvature to every coordinate of "
                  "the potential: how much, at the notebook's rho?",
                  "Differentiate the term twice in one coordinate: 1 / rho^2.",
                  ("12b42b7f62229ea1b362a9d2", "d0126be836d9aabec0b22635", "172f5c76f6a97ad046c57f70"), tol=0.5),
    "6.3": Hashed("Can the NLL of the mean of several predictives (the samples' average) be larger than the "
                  "mean of their NLLs? Answer 'yes' or 'no'.",
                  "-log is convex (Jensen's inequality). Compare the single samples' NLLs printed above with "
                  "the NLL of their mean.",
                  ("e5ee39a007f7167907a1d500",)),
    # 7. verify your own sampler
    "7.1": Hashed("An O step over a half step tau = h/2 that reads dW instead of J has a noise variance too "
                  "large by the factor Var dW / Var J = 1 + c gamma h + O(h^2). What is c?",
                  "pair_covariance(gamma, tau) gives both variances; expand (1 - exp(-2 gamma tau)) / (2 gamma) "
                  "to second order in tau, then write tau in terms of h.",
                  ("24457bc71633587ba21654af", "86f9eb8e67262e3b8ec68089", "b9ae10ab3a1a0d3bc55d5f7b"), tol=0.05),
    "7.2": Hashed("Besides the weak orders, which named check of verify fails when the O step's noise is "
                  "sqrt(gamma) instead of sqrt(2 gamma)?",
                  "Print the report of AOBOA_COLD: report.failed lists the failing checks by name.",
                  ("2cd412fb1e32ddef79e3301e",)),
    "7.3": Hashed("Plant a third mistake: AOBOA whose kick uses h/2 instead of h. As h -> 0, by what factor "
                  "is its stationary covariance multiplied, compared with the target's?",
                  "Halving the force is following the gradient of f/k for which k? Or plant it: copy aoboa_step "
                  "with 0.5 * h in the kick and divide stationary_moments(target, scheme, 'full', 1e-3, 1.0)"
                  ".covariance by target.covariance.",
                  ("97809d49410e831de90ea994", "907f5ed6008bb83fd7075199", "6bc382777be870de0c66f66e"), tol=0.1),
}


def check(exercise_id: str, answer) -> bool:
    """Print whether ``answer`` to an exercise is right, with a hint when it is not.

    Never prints the answer.

    Parameters
    ----------
    exercise_id : str
        The exercise, a key of ``EXERCISES`` (the notebooks name it, e.g. ``"1.1"``).
    answer : object
        The reader's answer, of the type the exercise's question asks for.

    Returns
    -------
    bool
        True when the answer is right.

    Raises
    ------
    ValueError
        If ``exercise_id`` is not a known exercise.
    """
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {', '.join(EXERCISES)}")
    exercise = EXERCISES[exercise_id]
    if exercise.is_right(exercise_id, answer):
        print(f"Exercise {exercise_id}: right.")
        return True
    print(f"Exercise {exercise_id}: not yet. Hint: {exercise.hint}")
    return False


def question(exercise_id: str) -> str:
    """The question of an exercise, as the notebooks print it.

    Parameters
    ----------
    exercise_id : str
        The exercise, a key of ``EXERCISES``.

    Returns
    -------
    str
        The question.

    Raises
    ------
    ValueError
        If ``exercise_id`` is not a known exercise.
    """
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {', '.join(EXERCISES)}")
    return EXERCISES[exercise_id].question
