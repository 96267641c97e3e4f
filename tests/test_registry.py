"""Schemes and plans come from their registries: every compiled step equals the affine map it
declares (to rounding), the probed maps equal the declared ones, the oracle agrees whichever it
uses, and a scheme and a plan registered from a test appear in the claims table and the
weak-orders figure with no other file changed."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import draw_files
from hypothesis import given, settings
from hypothesis import strategies as st

from integrators import GaussianTarget
from integrators._bounce import make_box
from integrators.plans import PLANS, Plan, register_plan, resolve_plan, unregister_plan
from integrators.registry import discover_modules
from integrators.schemes import SCHEMES, Scheme, register_scheme, unregister_scheme
from integrators.targets._force import force_data, lane_force_for
from theory_checks._declared import expected_strong_order, expected_weak_order
from theory_checks._probe import probe_step_map
from theory_checks.oracle import (
    affine_force,
    path_noise_covariance,
    rotation_map,
    rotation_slots,
    stationary_moments,
    step_map,
)

DECLARED = sorted(name for name, s in SCHEMES.items() if getattr(s, "affine_ops", None) is not None)
TOL = 1e-13


def random_target(rng, d, n):
    means = rng.normal(size=(n, d))
    roots = rng.normal(size=(n, d, d)) / math.sqrt(d)
    return GaussianTarget(means, roots @ np.swapaxes(roots, 1, 2) + 0.2 * np.eye(d),
                          prior_precision=0.3 * np.eye(d), prior_mean=rng.normal(size=d))


def random_batch(rng, n_data, n_b):
    return rng.choice(n_data, size=n_b, replace=False)


@pytest.mark.parametrize("scheme", DECLARED)
@settings(max_examples=15)
@given(d=st.integers(1, 3), n=st.integers(2, 7), bs=st.integers(1, 3), h=st.floats(1e-3, 0.6),
       gamma=st.floats(0.05, 10.0), seed=st.integers(0, 2**31), chains=st.integers(1, 4), cv=st.booleans())
@pytest.mark.slow
def test_compiled_step_equals_its_declared_affine_map(scheme, d, n, bs, h, gamma, seed, chains, cv):
    """On a Gaussian target with a prior, random batches (the plan's last, uneven batch
    included), control variate or not, random path noise ``xi = (dW1, J1, dW2, J2)``, each
    chain's compiled step equals the declared affine map to 1e-13 relative to the size of the
    state, noise terms included.  First-same-as-last schemes are compared in rotated form:
    ``K_w s' + N xi = A (K_{w_prev} s + N xi_prev) + a + C xi_t``, where a rotation that crosses an
    O step (OBABO) undoes that step's own noise ``N xi``, so the transition's noise ``xi_t`` takes
    those slots from the previous step (``xi_prev``, drawn at random too) and the rest from this one."""
    rng = np.random.default_rng(seed)
    target = random_target(rng, d, n)
    bs = min(bs, n)
    n_b = int(rng.choice([bs, n - (math.ceil(n / bs) - 1) * bs]))  # a full or the last batch
    scale = float(math.ceil(n / bs))
    module = SCHEMES[scheme]
    x_ref = rng.normal(size=d) if cv else None
    batches = [random_batch(rng, n, n_b) for _ in range(chains)]
    prev = [random_batch(rng, n, n_b) for _ in range(chains)]
    maps = {}

    def force_map(batch):
        key = tuple(batch)
        if key not in maps:
            maps[key] = affine_force(target, key, scale, cv, x_ref)
        return maps[key]

    x, v = rng.normal(size=(chains, d)), rng.normal(size=(chains, d))
    xi = rng.normal(size=(chains, 4, d)) * 0.5  # this step's path noise, the compiled step's dW, J
    xi_prev = rng.normal(size=(chains, 4, d)) * 0.5  # the previous step's
    g = np.array([force_map(prev[c])[0] @ x[c] - force_map(prev[c])[1] for c in range(chains)])
    if not module.FSAL:
        g = rng.normal(size=(chains, d))  # overwritten by the step
    xs, vs, gs = x.copy(), v.copy(), g.copy()
    dW = np.ascontiguousarray(xi[:, 0::2].transpose(1, 2, 0))
    J = np.ascontiguousarray(xi[:, 1::2].transpose(1, 2, 0))
    module.step(xs, vs, gs, module.coefficients(h, gamma), dW, J, lane_force_for(target),
                np.ascontiguousarray(np.array(batches, dtype=np.int64).T), n_b, scale,
                force_data(target, cv, x_ref), make_box(d))
    for c in range(chains):
        hess_w, b_w = force_map(batches[c])
        hess_r, b_r = force_map(prev[c]) if module.FSAL else (hess_w, b_w)
        a_mat, a_vec, c_mat = step_map(scheme, hess_r, b_r, h, gamma)
        k_prev, kv_prev, n_prev = rotation_map(scheme, hess_r, b_r, h, gamma, noise=True)
        k_new, kv_new, n_new = rotation_map(scheme, hess_w, b_w, h, gamma, noise=True)
        xi_t = xi[c].copy()
        xi_t[rotation_slots(n_prev)] = xi_prev[c][rotation_slots(n_prev)]
        rotated = k_prev @ np.concatenate([x[c], v[c]]) + kv_prev + n_prev @ xi_prev[c].reshape(-1)
        want = a_mat @ rotated + a_vec + c_mat @ xi_t.reshape(-1)
        got = k_new @ np.concatenate([xs[c], vs[c]]) + kv_new + n_new @ xi[c].reshape(-1)
        size = max(1.0, np.abs(want).max(), np.abs(rotated).max())
        assert np.abs(got - want).max() <= TOL * size, (got, want)
        if module.FSAL:  # the cached force is the new state's force with the new batch
            assert np.abs(gs[c] - (hess_w @ xs[c] - b_w)).max() <= TOL * max(1.0, np.abs(gs[c]).max())


@pytest.mark.parametrize("scheme", DECLARED)
@settings(max_examples=10)
@given(d=st.integers(1, 3), n=st.integers(2, 5), h=st.floats(1e-3, 0.6), gamma=st.floats(0.05, 10.0),
       seed=st.integers(0, 2**31), cv=st.booleans())
@pytest.mark.slow
def test_probed_affine_map_equals_the_declared_one(scheme, d, n, h, gamma, seed, cv):
    """The map read off the compiled step by probing, with the cached force of batch ``w_prev``
    substituted, equals the declared map conjugated by the rotation, to 1e-13."""
    rng = np.random.default_rng(seed)
    target = random_target(rng, d, n)
    x_ref = rng.normal(size=d) if cv else None
    w_prev, w = random_batch(rng, n, 1), random_batch(rng, n, int(rng.integers(1, n + 1)))
    scale = 2.0
    module = SCHEMES[scheme]
    probed = probe_step_map(scheme, target, w, scale, h, gamma, cv, x_ref)
    assert probed.affine_residual < 1e-13
    hess_p, b_p = affine_force(target, w_prev, scale, cv, x_ref)
    hess_w, b_w = affine_force(target, w, scale, cv, x_ref)
    # the step's map on (x, v) with g = H_prev x - b_prev, as an augmented (2d + 1) matrix
    embed = np.zeros((3 * d + 1, 2 * d + 1))
    embed[:2 * d, :2 * d] = np.eye(2 * d)
    embed[2 * d:3 * d, :d] = hess_p
    embed[2 * d:3 * d, 2 * d] = -b_p
    embed[3 * d, 2 * d] = 1.0
    step_aug = np.zeros((2 * d + 1, 3 * d + 1))
    step_aug[:2 * d, :3 * d] = probed.A[:2 * d]
    step_aug[:2 * d, 3 * d] = probed.a[:2 * d]
    step_aug[2 * d, 3 * d] = 1.0
    t_map = step_aug @ embed

    def aug(mat, vec):
        out = np.eye(2 * d + 1)
        out[:2 * d, :2 * d], out[:2 * d, 2 * d] = mat, vec
        return out

    hess_r, b_r = (hess_p, b_p) if module.FSAL else (hess_w, b_w)
    a_mat, a_vec, c_mat = step_map(scheme, hess_r, b_r, h, gamma)
    *rot_new, n_new = rotation_map(scheme, hess_w, b_w, h, gamma, noise=True)
    *rot_prev, n_prev = rotation_map(scheme, hess_r, b_r, h, gamma, noise=True)
    k_new, k_prev = aug(*rot_new), aug(*rot_prev)
    lhs, rhs = k_new @ t_map, aug(a_mat, a_vec) @ k_prev
    assert np.abs(lhs - rhs).max() <= TOL * max(1.0, np.abs(rhs).max())
    # the noise, every scheme: on this step's slots the rotated probed noise is the declared one;
    # on the slots the rotation undoes (the previous step's in the transition) it cancels, and the
    # declared map carries the previous step's noise through the rotation
    noise = k_new[:2 * d, :2 * d] @ probed.C[:2 * d] + n_new
    size = max(1.0, np.abs(c_mat).max(), np.abs(n_new).max())
    undone = rotation_slots(n_prev)
    for k in range(4):
        cols = slice(k * d, (k + 1) * d)
        if k in undone:
            assert np.abs(noise[:, cols]).max() <= TOL * size
            assert np.abs(a_mat @ n_prev[:, cols] + c_mat[:, cols]).max() <= TOL * size
        else:
            assert np.abs(noise[:, cols] - c_mat[:, cols]).max() <= TOL * size


@pytest.mark.slow
@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("scheme", DECLARED)
def test_oracle_from_probed_maps_equals_oracle_from_declared_maps(scheme, plan):
    rng = np.random.default_rng(3)
    target = random_target(rng, 2, 3)
    kwargs = dict(batch_size=None if plan == "full" else 2, control_variate=True, x_ref=np.ones(2))
    h = 0.05 if scheme == "em" else 0.2  # EM's stability region is smaller
    declared = stationary_moments(target, scheme, plan, h, 1.3, maps="declared", **kwargs)
    probed = stationary_moments(target, scheme, plan, h, 1.3, maps="probed", **kwargs)
    for a, b in ((declared.mean, probed.mean), (declared.second_moment, probed.second_moment)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_path_noise_covariance_is_the_layout_the_probe_uses():
    cov = path_noise_covariance(1, 0.2, 1.0)
    assert cov.shape == (4, 4) and cov[0, 0] == pytest.approx(0.1) and cov[0, 2] == 0.0


def test_declared_orders_come_from_the_declared_objects():
    """Expected orders are the smaller of the scheme's and the plan's declarations."""
    for s, scheme in SCHEMES.items():
        for p, plan in PLANS.items():
            weak = expected_weak_order(s, p)
            if plan.WEAK_ORDER is None:
                assert weak is None
            else:
                assert weak == min(scheme.WEAK_ORDER, plan.WEAK_ORDER)
            strong = expected_strong_order(s, p)
            assert strong is None or strong <= scheme.STRONG_ORDER
    assert expected_weak_order("ubu", "iid") == 1 and expected_strong_order("ubu", "iid") == 0.5
    assert expected_strong_order("ubu", "sms") == 2 and expected_weak_order("em", "sms") == 1
    assert SCHEMES["baoab"].FSAL and SCHEMES["obabo"].FSAL
    assert not SCHEMES["ubu"].FSAL and not SCHEMES["em"].FSAL


def test_each_built_in_scheme_and_plan_is_the_one_object_its_module_offers():
    """A built-in member module offers one name, its ``SCHEME`` (``PLAN``), and the registry holds
    that object; a built-in scheme declares its ``UPDATE``, and no backend keeps a file per scheme."""
    root = Path(__file__).resolve().parents[1]
    for package, registry, name, kind in (("integrators.schemes", SCHEMES, "SCHEME", Scheme),
                                          ("integrators.plans", PLANS, "PLAN", Plan)):
        modules = discover_modules(package, (name,))
        # every public file of the package is a member, named after its file: a new file is a new member
        files = sorted(root.joinpath(*package.split(".")).glob("[!_]*.py"))
        assert {getattr(m, name).NAME for m in modules} == {p.stem for p in files}
        for module in modules:
            declared = getattr(module, name)
            assert isinstance(declared, kind) and registry[declared.NAME] is declared, module.__name__
            assert module.__all__ == [name], module.__name__
            if kind is Scheme:  # its moves serve the numpy reference, the tensor step and the fused kernel
                assert isinstance(declared.UPDATE, tuple), module.__name__
    for folder in ("integrators/torch/schemes", "integrators/torch/_fused"):
        stems = {p.stem for p in root.joinpath(folder).glob("[!_]*.py")}
        assert not stems & set(SCHEMES), (folder, stems & set(SCHEMES))


def test_registering_checks_what_a_scheme_or_plan_declares():
    with pytest.raises(ValueError, match="WEAK_ORDER"):
        register_scheme(Scheme("bad", SCHEMES["ubu"].step, SCHEMES["ubu"].coefficients, WEAK_ORDER=0,
                               STRONG_ORDER=1))
    with pytest.raises(ValueError, match="already registered"):
        register_scheme(Scheme("ubu", SCHEMES["ubu"].step, SCHEMES["ubu"].coefficients, 2, 2))
    with pytest.raises(ValueError, match="lacks"):
        register_plan(object())
    with pytest.raises(ValueError, match="unknown plan"):
        resolve_plan("nope")


@pytest.fixture
def throwaway():
    """A scheme (UBU's step under a new name) and a plan (a copy of sms) registered only here."""
    ubu, sms = SCHEMES["ubu"], PLANS["sms"]
    scheme = register_scheme(Scheme("ubu_copy", ubu.step, ubu.coefficients, WEAK_ORDER=2.0, STRONG_ORDER=2.0))
    plan = register_plan(Plan("sms_copy", sms.outcomes, sms.force_scale, sms.period, WEAK_ORDER=2.0,
                              STRONG_ORDER=2.0))
    yield scheme, plan
    unregister_scheme("ubu_copy")
    unregister_plan("sms_copy")


@pytest.mark.slow
def test_a_scheme_and_plan_registered_in_a_test_appear_in_the_claims_table_and_the_figure(throwaway, tmp_path):
    from experiments.weak_orders import EXPERIMENT as fig_weak_orders
    from theory_checks._claims import weak_order_rows

    rows = {r["claim"]: r for r in weak_order_rows("quick")}
    for claim in ("weak order of UBU_COPY x sms (variance bias, 1-D example)",
                  "weak order of UBU x sms_copy (variance bias, 1-D example)",
                  "weak order of UBU_COPY x sms_copy (variance bias, 1-D example)"):
        assert rows[claim]["verdict"] == "holds" and rows[claim]["expected"] == "weak order 2"
    # the copies measure exactly what the originals do
    assert rows["weak order of UBU_COPY x sms_copy (variance bias, 1-D example)"]["measured"] == \
        rows["weak order of UBU x sms (variance bias, 1-D example)"]["measured"]
    units = fig_weak_orders.units("quick")
    assert {"scheme": "ubu_copy", "plan": "sms_copy"} in units
    chosen = [u for u in units if u["scheme"] in ("ubu", "ubu_copy") and u["plan"] in ("sms", "sms_copy", "iid")]
    results = [(u, fig_weak_orders.run_unit(u, "quick", 0)) for u in chosen]
    draw_files(fig_weak_orders, results, "quick", tmp_path)
    with open(tmp_path / "weak_orders.csv") as fh:
        seen = {(r["scheme"], r["plan"]) for r in csv.DictReader(fh)}
    assert ("ubu_copy", "sms_copy") in seen and ("ubu", "iid") in seen
    assert (tmp_path / "weak_orders.png").stat().st_size > 0


# --- the figure registry's optional extras (a base install runs every figure that needs none) ---

ABSENT = "sms_langevin_no_such_module"  # a name no installation provides


@settings(max_examples=40)
@given(needs=st.lists(st.sampled_from([(), ("numpy",), (ABSENT,), ("numpy", ABSENT), ("torch_absent_too",)]),
                      min_size=1, max_size=6))
def test_runnable_keeps_exactly_the_figures_whose_requirements_are_installed(needs):
    """In order, the figures whose ``REQUIRES`` are all importable run; one line names every other
    one; nothing is left out when nothing is absent."""
    import types

    from reports import registry
    names = [f"fig{i}" for i in range(len(needs))]
    figures = {n: types.SimpleNamespace(REQUIRES=req) for n, req in zip(names, needs, strict=True)}
    ids, note = registry.runnable(figures, names)
    left_out = [n for n, req in zip(names, needs, strict=True) if any(r != "numpy" for r in req)]
    assert ids == [n for n in names if n not in left_out]
    assert (note is None) == (not left_out)
    if note:
        assert "\n" not in note and note.startswith(f"{', '.join(left_out)} not run: needs ")


def test_extras_name_the_pyproject_extras_that_install_them():
    """Each module of ``registry.EXTRAS`` is a requirement of the extra it names in pyproject.toml,
    and every module a figure or the tour declares in ``REQUIRES`` has its extra there."""
    import re
    import tomllib
    from pathlib import Path

    import tour
    from reports import registry
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    for module, extra in registry.EXTRAS.items():
        dists = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower().replace("-", "_") for r in extras[extra]}
        assert module in dists, (module, extra)
    declared = [n for mod in [tour, *registry.load().values()] for n in getattr(mod, "REQUIRES", ())]
    assert "torch" in declared and set(declared) <= set(registry.EXTRAS)
    from integrators._install import install_command
    assert registry.install_hint("torch.nn") == f"needs the torch extra: {install_command('torch')}"
