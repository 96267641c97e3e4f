"""SMS-UBU against SG-UBU on the paper's 1-D example (the demo)."""

from __future__ import annotations

from pathlib import Path

from bias import demo

ID = "demo"
TITLE = "SMS-UBU against SG-UBU on the 1-D example, against the exact target"
CLAIM = ("Symmetric minibatch splitting makes UBU's stationary bias second order in h; SG-UBU (iid "
         "batches) is first order (paper, Sections 2-3).")
COST = {"quick": "~15 s", "full": "~1 min"}


def units(preset: str) -> list[dict]:
    return [{"sampler": name, "k": k} for name in demo.SAMPLERS for k in range(2, 6)]


def run_unit(unit: dict, preset: str, seed: int) -> dict:
    out = demo.run_unit(unit["sampler"], unit["k"], preset, seed)  # the unit's seed (store.unit_seed), unreduced
    out.pop("summary")
    return out


def draw(results: list, out_dir: Path, preset: str) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    demo.write_outputs(out_dir, [res for _, res in results])
    rows = [res["row"] for _, res in results]
    at = {r["sampler"]: abs(r["variance_bias"]) for r in rows if r["h"] == 0.03125}
    return {"files": ["demo.png", "demo.pdf", "demo.csv"],
            "measured": "|variance bias| at h = 1/32: " + ", ".join(f"{k} {v:.2e}" for k, v in at.items()) + "."}
