"""The demo writes its PNG, CSV and metadata, and SMS-UBU beats SG-UBU on the variance bias."""

import csv
import json

import pytest

from integrators import demo


def test_demo_tiny_preset_writes_outputs(tmp_path):
    rows = demo.run(tmp_path, seed=1, preset="tiny")
    assert (tmp_path / "demo.png").stat().st_size > 10_000
    with open(tmp_path / "demo.csv") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(rows) == 8
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["seed"] == 1 and meta["preset"] == "tiny" and "git_commit" in meta
    biggest = {r["sampler"]: abs(r["variance_bias"]) for r in rows if r["h"] == 0.25}
    assert biggest["SMS-UBU"] < biggest["SG-UBU"]


def test_demo_rejects_bad_preset_and_unwritable_out(tmp_path):
    with pytest.raises(ValueError, match="preset"):
        demo.run(tmp_path, preset="huge")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exc:
        demo.main(["--out", str(blocker / "sub")])
    assert exc.value.code == 2
