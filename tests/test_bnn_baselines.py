"""The paper's Adam baseline beside the annealed one (bnn.training.train's schedules,
RunConfig.paper_baseline) and the regime preset's run counts."""

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from bnn.training import train  # noqa: E402
from experiments.bnn import _pipeline as pipeline
from experiments.bnn import _presets as presets

# 200 digits in batches of 100: 2 steps per epoch
SMALL = pipeline.RunConfig("digits", "fashion_mnist", width=0.125, n_train=200, n_test=100, batch_size=100,
                           epochs_train=3, epochs_swa=1, epochs_burn=0, epochs_sample=1, h=1e-3,
                           samplers=("SMS-UBU",), n_eval_batches=1, lr_adam=0.03, lr_swa=0.002)


@pytest.fixture(scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _rates(monkeypatch, schedule):
    """The learning rate of every optimizer step of ``train`` under ``schedule``."""
    from bnn import models
    from bnn.training import load, tensors

    seen = []
    step = torch.optim.Adam.step

    def spy(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    data = tensors(load(SMALL), SMALL, "cpu", 0)
    torch.manual_seed(0)
    net = models.build(SMALL.network, width=SMALL.width, in_shape=data.in_shape, n_classes=data.n_classes)
    train(net, data, SMALL, torch.Generator().manual_seed(0), {}, schedule=schedule)
    return seen


def test_paper_schedule_steps_the_decay_once_per_epoch(monkeypatch, one_thread):
    lr, swa = SMALL.lr_adam, SMALL.lr_swa
    per_epoch = _rates(monkeypatch, "per_epoch")
    assert per_epoch == pytest.approx([lr, lr, lr * 2 / 3, lr * 2 / 3, lr / 3, lr / 3, swa, swa])
    monkeypatch.undo()
    per_step = _rates(monkeypatch, "per_step")
    assert per_step == pytest.approx([lr * (1 - k / 6) for k in range(6)] + [swa, swa])


def test_train_refuses_an_unknown_schedule():
    with pytest.raises(ValueError, match="schedule must be one of 'per_step', 'per_epoch'"):
        train(None, None, SMALL, None, {}, schedule="cosine")


def test_paper_baseline_is_scored_beside_the_annealed_one_without_changing_it(one_thread):
    plain = pipeline.run(SMALL, 5)
    both = pipeline.run(pipeline.with_overrides(SMALL, paper_baseline=True, paper_epochs_train=2,
                                                paper_epochs_swa=1), 5)
    assert {"Adam (paper)", "SWA (paper)"} <= set(both["methods"]) and "Adam (paper)" not in plain["methods"]
    assert len(both["paper_train_losses"]) == 3
    for name in ("Adam", "SWA", "SMS-UBU"):  # its own generator: the annealed run is the same run
        assert both["methods"][name]["probs"] == plain["methods"][name]["probs"], name
    assert both["methods"]["Adam (paper)"]["probs"] != plain["methods"]["Adam"]["probs"]
    assert {"paper adam", "paper swa"} <= set(both["timings"])


@pytest.mark.parametrize(("change", "match"), [
    ({"paper_baseline": "yes"}, "paper_baseline must be True or False"),
    ({"paper_baseline": 1}, "paper_baseline must be True or False"),
    ({"paper_epochs_train": 0}, "paper_epochs_train"),
    ({"paper_epochs_swa": -1}, "paper_epochs_swa"),
    ({"paper_epochs_train": 1.5}, "paper_epochs_train"),
])
def test_run_config_refuses_bad_paper_baseline_fields(change, match):
    with pytest.raises(ValueError, match=match):
        pipeline.with_overrides(SMALL, **change)


def test_paper_baseline_fields_are_keyword_only():
    with pytest.raises(TypeError):
        pipeline.RunConfig("digits", "fashion_mnist", 1.0)


def test_regime_runs_give_every_ensemble_verdict_of_sms_ubu_seven_degrees_of_freedom():
    for exp in presets.experiments("regime"):
        assert exp.n_runs == 32 and exp.n_runs // 4 - 1 >= 7  # groups of 4: 8 groups, 7 d.f.
        assert exp.config.paper_baseline and exp.config.paper_epochs_train == 15 and exp.config.paper_epochs_swa == 5
        every = presets.run_config("regime", exp.name, exp.sampler_runs - 1)
        later = presets.run_config("regime", exp.name, exp.sampler_runs)
        assert set(every.samplers) == set(presets.REGIME_SAMPLERS) and later.samplers == ("SMS-UBU",)
        assert later.paper_baseline and presets.run_config("regime", exp.name, 31).samplers == ("SMS-UBU",)
        assert presets.run_config("regime", exp.name, 0).h_panel  # the extras still come first
    for exp in presets.experiments("regime-tiny"):  # the tests' level runs the same code path, cheaply
        assert exp.config.paper_baseline and exp.config.paper_epochs_train <= 2
        assert presets.run_config("regime-tiny", exp.name, 1).samplers == ("SMS-UBU",)
