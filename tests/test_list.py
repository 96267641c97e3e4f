"""``sms-langevin list`` gives every figure's unit count and cost at every preset of the registry, tiny
(the level of ``make demo``) included where a figure runs its quick level there."""

from __future__ import annotations

import pytest

from reports import _cli as cli
from reports import registry

FIGURES = registry.load()


@pytest.fixture(scope="module")
def listing():
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["list"]) == 0
    return out.getvalue()


@pytest.mark.parametrize("fid", list(FIGURES))
def test_list_gives_each_figures_units_and_cost_at_every_preset(listing, fid):
    mod = FIGURES[fid]
    entry = listing.split(f"\n{fid} ", 1)[-1] if not listing.startswith(f"{fid} ") else listing[len(fid):]
    line = next(ln for ln in entry.splitlines() if "units: " in ln)
    for preset in registry.PRESETS:
        level = registry.module_preset(mod, preset)
        assert f"{preset} {len(mod.units(level))}" in line.split("; cost:")[0], (preset, line)
        cost = line.split("; cost: ", 1)[1]
        said = f"{preset}: " if level == preset else f"{preset} (runs its {level} level): "
        assert said + mod.COST[level] in cost, (preset, cost)
