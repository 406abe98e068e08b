"""save_best on MMEngine-style keys: the rule inferred from the whole key, no false typo
warning, the best file's name with ``by_epoch=False``, and ``best_score`` / ``best_ckpt`` in
the message hub (resumed too)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError, Runner
from hookline.hooks import CheckpointHook, EarlyStoppingHook, EvalHook
from hookline.hooks._rules import infer_rule

from ._toy import BNNet, dataset, one_thread  # noqa: F401  (one_thread: an autouse fixture)

SCRIPT = [0.5, 0.7, 0.6, 0.9, 0.8, 0.4]


def scripted():
    """A metric reporting MMEngine-style keys, its values scripted per validation."""
    calls = {"n": 0}

    def metric(preds, targets):
        value = SCRIPT[calls["n"] % len(SCRIPT)]
        calls["n"] += 1
        return {"accuracy/top1": value, "err/x": 1 - value}
    return metric


def make(work_dir, checkpoint, *, max_epochs=4, hooks=(), **kwargs):
    torch.manual_seed(0)
    return Runner(BNNet(), optimizer={"type": "SGD", "lr": 0.05},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(dataset(), batch_size=8),
                  val_dataloader=DataLoader(dataset(16, seed=1), batch_size=16),
                  metrics=kwargs.pop("metrics", {"accuracy": scripted()}),
                  max_epochs=max_epochs, work_dir=work_dir, hooks=list(hooks),
                  default_hooks={"checkpoint": checkpoint, "progress": None, "logger": None},
                  **kwargs)


def log_of(work_dir) -> str:
    return (work_dir / "log.txt").read_text(encoding="utf-8")


# -- 5. the rule of the whole key, as MMEngine infers it ---------------------------------------------
@pytest.mark.parametrize("key, rule", [
    ("accuracy/top1", "greater"), ("loss/total", "less"), ("accuracy/mean", "greater"),
    ("acc/mean", "greater"), ("mAP/bbox", "greater"), ("precision/cls_0", "greater"),
    ("coco/bbox_mAP", "greater"), ("val/loss", "less"), ("err/x", "less"), ("loss", "less"),
    ("AR@100", "greater"), ("mIoU", "greater"),
])
def test_the_rule_is_inferred_from_the_whole_key(key, rule):
    assert infer_rule(key) == rule
    assert CheckpointHook(save_best=key).rule == rule
    assert EarlyStoppingHook(key).rule == rule


def test_a_misspelt_metric_name_is_named_as_a_likely_typo_not_only_as_a_missing_rule():
    # under DDP and in plain runs alike, the rule is inferred when the hook is built: before
    # the Runner's metric-name check, so the rule's error says what the typo probably is
    with pytest.raises(ConfigError, match="is it a typo of 'accuracy'"):
        CheckpointHook(save_best="acuracy")
    with pytest.raises(ConfigError, match="is it a typo of 'loss'"):
        EarlyStoppingHook("los")
    with pytest.raises(ConfigError) as caught:
        CheckpointHook(save_best="widget/x")
    assert "typo" not in str(caught.value)


def test_a_key_of_no_known_kind_still_needs_a_rule():
    with pytest.raises(ConfigError, match="cannot infer whether 'widget/x'"):
        CheckpointHook(save_best="widget/x")


# -- 6. no "did you mean" for a name a metric may report -------------------------------------------
def test_no_typo_warning_for_a_name_a_dict_metric_reports(tmp_path):
    run = make(tmp_path, {"type": "CheckpointHook", "save_best": "accuracy/top1"}, max_epochs=1,
               hooks=[EarlyStoppingHook("accuracy/top1", patience=5)])
    run.train()
    assert "did you mean" not in log_of(tmp_path)
    assert list(tmp_path.glob("best_accuracy_top1_epoch_1.pth"))


def test_the_typo_warning_stays_where_every_name_is_known(tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'accuracy'"):  # given to the Runner
        make(tmp_path, {"type": "CheckpointHook", "save_best": "acuracy", "rule": "greater"},
             max_epochs=1, metrics={"accuracy": "accuracy"})
    run = make(tmp_path, None, max_epochs=1, metrics={"accuracy": "accuracy"})
    run.register_hook({"type": "CheckpointHook", "save_best": "acuracy", "rule": "greater"})
    with pytest.raises(Exception, match="acuracy"):
        run.train()
    assert "save_best='acuracy' is not a metric this run's validation reports (accuracy, loss); " \
           "did you mean 'accuracy'?" in log_of(tmp_path)


@pytest.mark.parametrize("name", ["val_accuracy/top1", "val/accuracy/top1"])
def test_save_best_takes_lightnings_val_prefix_as_early_stopping_does(tmp_path, name):
    """``save_best="val_loss"`` (what a Lightning user writes, and what hookline's refusal of
    Lightning's ModelCheckpoint suggests) tracks ``loss``; the best file keeps the given name."""
    run = make(tmp_path, {"type": "CheckpointHook", "save_best": name}, max_epochs=4)
    run.train()  # accuracy/top1: 0.5, 0.7, 0.6, 0.9: best at epochs 1, 2 and 4
    assert run.message_hub.info["best_score"] == pytest.approx(0.9)
    safe = name.replace("/", "_")
    assert [p.name for p in tmp_path.glob("best_*.pth")] == [f"best_{safe}_epoch_4.pth"]
    with pytest.raises(ConfigError, match="did you mean 'loss'"):  # known names: at build
        make(tmp_path / "typo", {"type": "CheckpointHook", "save_best": "val_los", "rule": "less"},
             metrics={"accuracy": "accuracy"})


def test_a_name_validation_does_not_report_names_the_closest_at_run_time(tmp_path):
    run = make(tmp_path, None, max_epochs=1)  # a dict metric: its names known once it ran
    run.register_hook({"type": "CheckpointHook", "save_best": "val_accuracy/top"})
    with pytest.raises(Exception, match="did you mean 'accuracy/top1'"):
        run.train()


# -- 9. the best file's name ----------------------------------------------------------------------
def test_by_epoch_false_names_the_best_file_by_iteration_as_mmengine(tmp_path):
    run = make(tmp_path, {"type": "CheckpointHook", "interval": 6, "by_epoch": False,
                          "save_best": "accuracy/top1"})
    run.train()  # 6 iterations an epoch; best at validations 2 and 4
    files = sorted(p.name for p in tmp_path.glob("*.pth"))
    assert files == ["best_accuracy_top1_iter_24.pth", "iter_12.pth", "iter_18.pth",
                     "iter_24.pth", "iter_6.pth"]


def test_filename_tmpl_leaves_the_best_name_in_its_epoch_form(tmp_path):
    run = make(tmp_path, {"type": "CheckpointHook", "filename_tmpl": "ckpt_{}.pth",
                          "save_best": "accuracy/top1"})
    run.train()
    assert sorted(p.name for p in tmp_path.glob("*.pth")) == [
        "best_accuracy_top1_epoch_4.pth", "ckpt_1.pth", "ckpt_2.pth", "ckpt_3.pth", "ckpt_4.pth"]


def test_an_eval_hook_counting_iterations_names_its_best_by_iteration(tmp_path):
    hook = EvalHook(DataLoader(dataset(16, seed=1), batch_size=16), interval=12, by_epoch=False,
                    metrics={"accuracy": scripted()}, save_best="accuracy/top1")
    run = make(tmp_path, None, max_epochs=4, hooks=[hook])
    run.train()
    assert [p.name for p in tmp_path.glob("best_*.pth")] == ["best_accuracy_top1_iter_24.pth"]


# -- 10. best_score and best_ckpt in the message hub ----------------------------------------------
def test_best_score_and_best_ckpt_are_run_information_and_survive_resume(tmp_path):
    whole = make(tmp_path / "whole", {"type": "CheckpointHook", "save_best": "accuracy/top1"})
    whole.train()
    hub = whole.message_hub
    assert hub.get_info("best_score") == 0.9
    assert hub.get_info("best_ckpt") == str(tmp_path / "whole" / "best_accuracy_top1_epoch_4.pth")
    assert "best_score" in hub.runtime_info

    first = make(tmp_path / "cut", {"type": "CheckpointHook", "save_best": "accuracy/top1"},
                 max_epochs=2)
    first.train()
    assert first.message_hub.get_info("best_score") == 0.7
    resumed = make(tmp_path / "cut", {"type": "CheckpointHook", "save_best": "accuracy/top1"},
                   max_epochs=4, resume="auto", metrics={"accuracy": lambda p, t: {
                       "accuracy/top1": 0.1, "err/x": 0.9}})
    seen = []
    resumed.on("before_train_epoch", lambda runner: seen.append(
        (runner.message_hub.get_info("best_score"), runner.message_hub.get_info("best_ckpt"))))
    resumed.train()
    best = str(tmp_path / "cut" / "best_accuracy_top1_epoch_2.pth")
    assert seen == [(0.7, best), (0.7, best)]  # from the checkpoint, before any new validation
    assert resumed.message_hub.get_info("best_score") == 0.7


def test_a_metric_named_with_the_val_prefix_is_not_taken_for_a_typo(tmp_path):
    run = make(tmp_path, {"type": "CheckpointHook", "save_best": "val/acc"}, max_epochs=1,
               metrics={"val/acc": "accuracy"})
    run.train()
    assert "did you mean" not in log_of(tmp_path)
    assert list(tmp_path.glob("best_val_acc_epoch_1.pth"))
