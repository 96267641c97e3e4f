"""The demo's units and its one writer: SMS-UBU beats SG-UBU on the variance bias, and the CSV's
columns are fixed whatever order the rows come in (the report reads them back from JSON, key-sorted)."""

import csv
import json

import pytest
from helpers import draw_files

from experiments.demo import EXPERIMENT as fig_demo
from experiments.demo import _compute as demo

pytestmark = [pytest.mark.slow, pytest.mark.experiment]


@pytest.fixture(scope="module")
def tiny_results():
    return [demo.run_unit(name, k, "tiny", seed=1) for name in demo.SAMPLERS for k in range(2, 6)]


def test_demo_tiny_units_favour_sms_over_sg(tiny_results):
    biggest = {r["row"]["sampler"]: abs(r["row"]["variance_bias"]) for r in tiny_results if r["row"]["h"] == 0.25}
    assert biggest["SMS-UBU"] < biggest["SG-UBU"]


def test_demo_csv_columns_do_not_depend_on_the_rows_key_order(tmp_path, tiny_results):
    as_stored = json.loads(json.dumps(tiny_results, sort_keys=True))  # what the report's store gives back
    info = draw_files(fig_demo, [({}, r) for r in as_stored], "quick", tmp_path)
    assert info["files"] == ["demo.png", "demo.pdf", "demo.csv"]
    with open(tmp_path / "demo.csv") as fh:
        reader = csv.reader(fh)
        assert tuple(next(reader)) == demo.CSV_COLUMNS
        assert len(list(reader)) == 8
    assert (tmp_path / "demo.png").stat().st_size > 10_000


def test_demo_rejects_bad_preset():
    with pytest.raises(ValueError, match="preset"):
        demo.run_unit("SMS-UBU", 2, preset="huge")
