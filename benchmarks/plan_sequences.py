"""Every plan's batch sequences on every walker, to compare two revisions.

``python benchmarks/plan_sequences.py --save before.npz`` on one revision, then
``python benchmarks/plan_sequences.py --compare before.npz`` on the other: the batches of every
registered plan that a backend can walk, for a few ``(n_data, batch_size, seed)``, as drawn by
the Numba kernel (:func:`integrators.plans.batch_sequence`), the torch backend's chains
(``ChainPlan``, counter streams, several chains), module mode (``plan_batches``, a seeded
``torch.Generator``) and the adapters (``PlanBatches``, a seeded numpy generator).  Exit status 1
when any sequence differs.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

CASES = [(2, 1, 0), (7, 3, 1), (12, 4, 5), (10, 10, 2), (9, 2, 3)]  # (n_data, batch_size, seed)
N_CHAINS = 3


def sequences() -> dict:
    import numba as nb
    import torch

    from integrators.plans import PLANS, Plan, batch_sequence, period, plan_rule
    from integrators.plans._partitions import partition_plan_functions
    from integrators.torch._plans import ChainPlan, plan_batches
    from integrators.torch._rng import CounterNormals
    from theory_checks.adapters._runs import PlanBatches

    @nb.njit(inline="always")
    def backward_forward(position, n_batches):
        return n_batches - 1 - position if position < n_batches else position - n_batches

    fs, per, count, outc = partition_plan_functions(2, backward_forward)
    user = Plan("backward_forward", outc, fs, per, count_orders=count, batch_index=backward_forward, SWEEPS=2)
    plans = {name: PLANS[name] for name in sorted(PLANS)} | {user.NAME: user}
    out = {}
    for name, plan in plans.items():
        try:
            plan_rule(plan)
        except ValueError:
            continue
        for n_data, bs, seed in CASES:
            if name == "full":
                bs = n_data
            steps = 3 * period(plan, n_data, bs) + 1
            key = f"{name}/{n_data}/{bs}/{seed}"
            out[f"numba/{key}"] = np.concatenate(batch_sequence(plan, n_data, bs, steps, seed=seed))
            cp = ChainPlan(plan, n_data, bs, CounterNormals(seed, 1, torch.arange(N_CHAINS), torch.float64),
                           N_CHAINS, "cpu")
            got = [cp.next() for _ in range(steps)]
            out[f"torch/{key}"] = np.concatenate(
                [np.full((N_CHAINS, 1), -1) if b is None else b.numpy() for b in got], axis=1)
            gen = torch.Generator(device="cpu")
            gen.manual_seed(seed)
            it = plan_batches(plan, n_data, bs, gen, "cpu")
            out[f"module/{key}"] = np.concatenate([next(it).numpy() for _ in range(steps)])
            pb = PlanBatches(plan, n_data, bs, N_CHAINS, np.random.default_rng(seed))
            out[f"adapters/{key}"] = np.concatenate([np.array(pb.next()) for _ in range(steps)], axis=1)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", help="write the sequences to this .npz file")
    group.add_argument("--compare", help="compare with the sequences in this .npz file")
    args = parser.parse_args(argv)
    seqs = sequences()
    if args.save:
        np.savez(args.save, **seqs)
        print(f"{len(seqs)} sequences written to {args.save}")
        return 0
    before = dict(np.load(args.compare))
    differ = sorted(k for k in set(before) | set(seqs)
                    if k not in before or k not in seqs or not np.array_equal(before[k], seqs[k]))
    print(f"{len(seqs)} sequences now, {len(before)} before; {len(differ)} differ"
          + ("" if not differ else ": " + ", ".join(differ)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
