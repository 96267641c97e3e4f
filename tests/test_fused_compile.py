"""The fused chain kernel compiles for real GPU targets (sm_80, sm_90) without a GPU, and does not spill.

Triton's compiler takes an explicit target and ships ``ptxas`` and ``cuobjdump``
(:mod:`integrators.torch._fused._compile`), so a change that breaks GPU compilation or makes the kernel
spill to local memory fails here on any machine. Each configuration is the launch the torch backend makes
(:func:`integrators.torch._fused.launch_of`: its argument types, specialization, block size and warps).

Compiling costs 2-35 s a kernel on two cores, so the suite compiles a covering design (:func:`covering`):
every built-in scheme on every target, every specialization flag on at least once, both specializations of
the plans' code (a partition's shuffle, and none past ``SMALL_SHUFFLE`` data), ``d = 1``, and at
``d = MAX_DIM`` the smallest launch and the largest (every observer, the control variate, the prior and the
largest partition). ``benchmarks/bench_fused_compile.py`` compiles the whole matrix and prints the table.
Triton caches compiled kernels on disk, keyed by their source, so only a changed kernel compiles again.
"""

import numpy as np
import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from integrators.plans import SMALL_SHUFFLE  # noqa: E402
from integrators.torch._fused import FUSED_STEPS, MAX_DIM, launch_config  # noqa: E402
from integrators.torch._fused._compile import ARCHS, FLAGS, Config, largest, run_isolated, unavailable  # noqa: E402

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"cannot compile for GPU targets here: {WHY_NOT}")
SCHEMES = sorted(FUSED_STEPS)


def covering() -> list[Config]:
    """Each scheme on each target at small ``d``, with the flags and plans rotated over them so that each
    flag is on at least once and each plan's specialization is compiled; then the largest configuration."""
    plans = [dict(plan="sms", n_data=3, batch=2), dict(plan="full", n_data=2),
             dict(plan="iid", n_data=SMALL_SHUFFLE + 3, batch=3), dict(plan="rr", n_data=SMALL_SHUFFLE, batch=3)]
    configs = []
    for k, (scheme, arch) in enumerate((s, a) for s in SCHEMES for a in ARCHS):
        flags = {flag: (k + j) % 2 == 0 for j, flag in enumerate(FLAGS)}  # alternate: each on in half of them
        configs.append(Config(scheme, d=1 + k % 3, arch=arch, **plans[k % len(plans)], **flags))
    # at MAX_DIM the smallest launch as well as the largest: register use is not monotone in the flags (at 8
    # chains a program the smallest spilled and the largest did not)
    return configs + [Config(SCHEMES[0], MAX_DIM, n_data=2, plan="full", arch=ARCHS[0]),
                      largest(SCHEMES[-1], MAX_DIM, ARCHS[-1])]


def test_the_covering_design_covers():
    configs = covering()
    assert {(c.scheme, c.arch) for c in configs} == {(s, a) for s in SCHEMES for a in ARCHS}
    for flag in FLAGS:
        assert any(getattr(c, flag) for c in configs) and not all(getattr(c, flag) for c in configs), flag
    assert {c.plan for c in configs} >= {"full", "iid", "sms"}
    assert any(c.n_data > SMALL_SHUFFLE for c in configs) and any(c.batch > 1 and c.n_data <= SMALL_SHUFFLE
                                                                for c in configs)
    assert {1, MAX_DIM} <= {c.d for c in configs}


@pytest.fixture(scope="module")
def compiled():
    """The covering design, a planted spill and a planted compile error, compiled in one process."""
    planted = [Config(SCHEMES[0], d=1, maxnreg=40, arch=ARCHS[0]),  # 40 registers a thread: spills
               Config(SCHEMES[0], d=1, block=3)]  # not a power of two: tl.arange refuses it
    rows = run_isolated(covering() + planted)
    print("\n" + table(rows))
    return rows[:-2], rows[-2:]


def table(rows) -> str:
    lines = [f"{'configuration':70s} {'BLOCK':>5s} {'warps':>5s} {'regs':>4s} {'shared':>6s} {'stack':>5s} "
             f"{'STL/LDL':>7s} {'spilled':>7s} {'s':>5s}"]
    for row in rows:
        label = Config(**row["config"]).label()
        if "error" in row:
            lines.append(f"{label:70s} error: {row['error'].splitlines()[0][:80]}")
        else:
            lines.append(f"{label:70s} {row['block']:5d} {row['num_warps']:5d} {row['registers']:4d} "
                         f"{row['shared']:6d} {row['stack']:5d} {row['local_ops']:7d} {row['spill_bytes']:7d} "
                         f"{row['seconds']:5.1f}")
    return "\n".join(lines)


def test_every_covering_configuration_compiles_for_its_target_without_spilling(compiled):
    rows, _ = compiled
    failed = [row for row in rows if "error" in row or row["spills"]]
    assert not failed, "compile errors or spills at the launch's block size:\n" + table(failed)
    for row in rows:  # the launch's block size and warps, as the backend picks them for its d
        assert (row["block"], row["num_warps"]) == launch_config(row["config"]["d"]), row


def test_the_checks_see_a_spill_and_a_compile_error(compiled):
    _, (spill, error) = compiled
    assert "error" not in spill and spill["spills"] and spill["spill_bytes"] > 0 and spill["local_ops"] > 0, spill
    assert "error" in error and "arange" in error["error"].lower(), error


def test_launch_config_gives_power_of_two_blocks_and_warps_for_every_dimension():
    for d in range(1, MAX_DIM + 1):
        block, warps = launch_config(d)
        assert block >= 1 and block & (block - 1) == 0, (d, block)
        assert warps in (1, 2, 4, 8, 16), (d, warps)
    with pytest.raises(ValueError, match="d must be"):
        launch_config(MAX_DIM + 1)


def test_iid_and_full_past_small_shuffle_compile_no_shuffle_and_match_the_tensor_step():
    """Past ``SMALL_SHUFFLE`` data only ``iid`` and ``full`` run on the kernel: its specialization has no
    permutation (``SHUFFLE`` false, one column), and the run still equals the tensor step (interpreter)."""
    from integrators import sample
    from integrators._backends import Torch
    from integrators.targets import GaussianTarget
    from integrators.torch._fused._compile import launch_for

    launch = launch_for(Config(SCHEMES[0], d=2, n_data=SMALL_SHUFFLE + 5, plan="iid", batch=3))
    assert launch.constexprs["SHUFFLE"] is False and launch.constexprs["NP"] == 1
    rng = np.random.default_rng(3)
    n_data = 3 * SMALL_SHUFFLE + 1
    target = GaussianTarget(rng.normal(size=(n_data, 2)), np.tile(np.eye(2), (n_data, 1, 1)) * 0.8)
    for plan in ("iid", "full"):
        options = dict(h=0.2, gamma=1.3, n_steps=5, burn_in=1, n_chains=3, seed=4,
                       batch_size=None if plan == "full" else 5)
        fused = sample(target, "ubu", plan, backend=Torch(kernel="triton"), **options)
        tensor = sample(target, "ubu", plan, backend=Torch(kernel="torch"), **options)
        assert fused.meta["kernel"] == "triton"
        np.testing.assert_allclose(fused.x, tensor.x, rtol=0, atol=1e-12 * max(1.0, np.abs(tensor.x).max()))
