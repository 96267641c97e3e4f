"""``sms-langevin claims``: the claims table alone, computed in this process (no units kept)."""

from __future__ import annotations

import sys
import time

from reports import registry
from reports._cli_common import check_out, check_preset, out_path
from reports.drawing import write_drawing, write_metadata
from reports.store import unit_seed


def cmd_claims(args, figures) -> int:
    """The claims table alone, computed in this process and written into ``--out`` (no units kept)."""
    from reports._metadata import metadata
    # the toolkit's claims table (this command reads its sections and rows), also where
    # SMS_LANGEVIN_REPORT_MODULES leaves it out of ``figures`` or gives another figure its ID
    tab_claims = next(exp for exp in map(registry.declared_by, registry.DEFAULT_MODULES) if exp.ID == "claims")
    check_preset(args.preset)
    level = registry.module_preset(tab_claims, args.preset)  # tiny runs the quick table, as `run claims` does
    out = out_path(args.out)
    check_out(out)
    from integrators._disk_cache import describe_state
    print(f"claims: {describe_state()}", file=sys.stderr, flush=True)
    t0 = time.time()
    results = []
    for unit in tab_claims.units(level):
        results.append((unit, tab_claims.run_unit(unit, level, unit_seed(0, tab_claims.ID, unit))))
        print(f"claims: {unit['section']} done, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    drawing = tab_claims.draw(results, level)
    write_drawing(drawing, out)
    write_metadata(out / "metadata.json", {**metadata(0, level), "seconds": round(time.time() - t0, 1)})
    print(f"wrote {out / 'claims.md'}: {drawing.measured}")
    for _, res in results:
        for row in res["rows"]:
            if row["verdict"] == "fails":
                print(f"  FAILS: {row['claim']}: expected {row['expected']}, measured {row['measured']}")
    return 0
