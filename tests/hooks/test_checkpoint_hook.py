"""CheckpointHook on real runs: file names, keep-N across resume, best-by-metric (and a
run resumed from the best file), early ConfigErrors, iteration-based runs."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, HookError, Runner
from hookline.engine.checkpoint import load_checkpoint_file
from hookline.hooks import CheckpointHook


def data() -> TensorDataset:
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(24, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] - x[:, 2] > 0).long())


class Scores(Hook):
    priority = "LOWEST"

    def __init__(self) -> None:
        self.val: list[dict] = []

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.val.append(dict(metrics))


def make_runner(work_dir, hook: CheckpointHook | None, *, max_epochs=None, max_iters=None,
                resume=None, metrics=None, hooks=()) -> Runner:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                                torch.nn.Linear(8, 2))
    return Runner(model, optimizer={"type": "SGD", "lr": 0.2, "momentum": 0.9},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data(), batch_size=4, shuffle=True),  # 6 batches
                  val_dataloader=DataLoader(data(), batch_size=12),
                  metrics=metrics or {"accuracy": "accuracy"}, max_epochs=max_epochs,
                  max_iters=max_iters, work_dir=work_dir, device="cpu", resume=resume,
                  hooks=hooks, default_hooks={"logger": None, "progress": None, "checkpoint": hook})


def pth(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".pth")


def weights(runner) -> dict:
    return {k: v.clone() for k, v in runner.model.state_dict().items()}


@pytest.mark.parametrize("name, rule", [
    ("accuracy", "greater"), ("val/top1", "greater"), ("mAP", "greater"), ("mIoU", "greater"),
    ("auc", "greater"), ("precision", "greater"), ("loss", "less"), ("val/loss_cls", "less")])
def test_rule_is_inferred_from_the_metric_name(name, rule):
    assert CheckpointHook(save_best=name).rule == rule
    assert CheckpointHook(save_best=name, rule="less").rule == "less"


def test_uninferable_or_bad_arguments_fail_at_construction():
    with pytest.raises(ConfigError, match="cannot infer whether 'wer'.*rule='greater'"):
        CheckpointHook(save_best="wer")
    for kwargs in (dict(interval=0), dict(max_keep_ckpts=0), dict(filename_tmpl="ckpt.pth"),
                   dict(save_best="acc", rule="bigger"), dict(save_best="")):
        with pytest.raises(ConfigError):
            CheckpointHook(**kwargs)


def test_auto_with_an_uninferable_first_metric_fails_before_training(tmp_path):
    wer = {"wer": lambda preds, targets: torch.tensor(0.5)}
    runner = make_runner(tmp_path, CheckpointHook(save_best="auto"), max_epochs=2, metrics=wer)
    with pytest.raises(HookError, match="cannot infer whether 'wer'") as info:
        runner.train()
    assert isinstance(info.value.__cause__, ConfigError)
    assert runner.iter == 0 and pth(tmp_path) == []
    runner = make_runner(tmp_path, CheckpointHook(save_best="auto", rule="less"), max_epochs=1,
                         metrics=wer)
    runner.train()
    assert pth(tmp_path) == ["best_wer_epoch_1.pth", "epoch_1.pth"]


def test_files_names_and_contents(tmp_path):
    make_runner(tmp_path / "a", CheckpointHook(interval=2, save_optimizer=False),
                max_epochs=3).train()
    assert pth(tmp_path / "a") == ["epoch_2.pth", "epoch_3.pth"]  # 3: the last one
    assert "optimizer" not in load_checkpoint_file(tmp_path / "a" / "epoch_2.pth")
    make_runner(tmp_path / "b", CheckpointHook(filename_tmpl="ckpt_{}.pth", save_last=False,
                                               interval=2), max_epochs=3).train()
    assert pth(tmp_path / "b") == ["ckpt_2.pth"]
    make_runner(tmp_path / "c", CheckpointHook(by_epoch=False, interval=4), max_epochs=2).train()
    assert pth(tmp_path / "c") == ["iter_12.pth", "iter_4.pth", "iter_8.pth"]


def test_iteration_based_run_counts_passes_over_the_data_when_by_epoch(tmp_path):
    make_runner(tmp_path, CheckpointHook(), max_iters=15).train()  # 6 iterations per pass
    assert pth(tmp_path) == ["iter_12.pth", "iter_15.pth", "iter_6.pth"]


def test_max_keep_ckpts_deletes_the_right_files_across_resume(tmp_path):
    make_runner(tmp_path, CheckpointHook(max_keep_ckpts=2), max_epochs=3).train()
    assert pth(tmp_path) == ["epoch_2.pth", "epoch_3.pth"]
    hook = CheckpointHook(max_keep_ckpts=2)
    make_runner(tmp_path, hook, max_epochs=5, resume="auto").train()
    assert pth(tmp_path) == ["epoch_4.pth", "epoch_5.pth"]
    assert hook.kept == ["epoch_4.pth", "epoch_5.pth"]
    # resumed from an older file, the list it saved is what counts
    hook = CheckpointHook(max_keep_ckpts=2)
    make_runner(tmp_path, hook, max_epochs=6, resume=tmp_path / "epoch_4.pth").train()
    assert pth(tmp_path) == ["epoch_5.pth", "epoch_6.pth"]


def test_best_checkpoint_is_resumable_and_the_run_resumed_from_it_continues_exactly(tmp_path):
    full_scores = Scores()
    full_hook = CheckpointHook(save_best="accuracy", max_keep_ckpts=1)
    full = make_runner(tmp_path / "full", full_hook, max_epochs=5, hooks=[full_scores])
    full.train()
    best_values = [m["accuracy"] for m in full_scores.val]
    assert full_hook.best_score == max(best_values)
    first_best = best_values.index(max(best_values)) + 1
    assert full_hook.best_ckpt == f"best_accuracy_epoch_{first_best}.pth"
    assert pth(tmp_path / "full") == sorted(["epoch_5.pth", full_hook.best_ckpt])
    best = load_checkpoint_file(tmp_path / "full" / full_hook.best_ckpt)
    assert "optimizer" in best and best["meta"]["epoch"] == first_best

    # a shorter run's best file, resumed: same weights, scores and best as the full run
    short_hook = CheckpointHook(save_best="accuracy", max_keep_ckpts=1)
    make_runner(tmp_path / "short", short_hook, max_epochs=2).train()
    resumed_scores = Scores()
    resumed_hook = CheckpointHook(save_best="accuracy", max_keep_ckpts=1)
    resumed = make_runner(tmp_path / "short", resumed_hook, max_epochs=5, hooks=[resumed_scores],
                          resume=tmp_path / "short" / short_hook.best_ckpt)
    resumed.train()
    start = int(short_hook.best_ckpt.rsplit("_", 1)[1].split(".")[0])
    assert resumed_scores.val == full_scores.val[start:]
    for key, value in weights(full).items():
        assert torch.equal(value, weights(resumed)[key]), key
    assert resumed_hook.best_score == full_hook.best_score
    assert resumed_hook.best_ckpt == full_hook.best_ckpt
    assert pth(tmp_path / "short") == sorted(["epoch_5.pth", full_hook.best_ckpt])


def test_epoch_checkpoint_holds_what_the_validation_after_it_changed(tmp_path):
    hook = CheckpointHook(save_best="loss")
    scores = Scores()
    make_runner(tmp_path, hook, max_epochs=2, hooks=[scores]).train()
    saved = load_checkpoint_file(tmp_path / "epoch_2.pth")["hooks"]["CheckpointHook"]
    assert saved["best"]["best_score"] == min(m["loss"] for m in scores.val)
    assert saved["kept"] == ["epoch_1.pth", "epoch_2.pth"]


def test_standalone_validation_saves_no_best_file(tmp_path):
    runner = make_runner(tmp_path, CheckpointHook(save_best="accuracy"), max_epochs=1)
    runner.train()
    before = pth(tmp_path)
    torch.nn.init.zeros_(runner.model[0].weight)
    runner.val()
    assert pth(tmp_path) == before


def test_save_best_metric_missing_from_validation_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"save_best: 'mAP' is not a validation metric"):
        make_runner(tmp_path, CheckpointHook(save_best="mAP"), max_epochs=1)  # at construction
    runner = make_runner(tmp_path, None, max_epochs=1)
    runner.register_hook(CheckpointHook(save_best="mAP"))  # added later: the validation tells
    with pytest.raises(HookError, match=r"save_best='mAP' is not among the validation metrics"):
        runner.train()


def test_file_names_from_a_crafted_checkpoint_never_delete_outside_the_work_dir(tmp_path):
    """``kept`` and the best file name come back from checkpoints and are later deleted as
    ``work_dir / name``: names with a folder part are dropped when loaded."""
    work = tmp_path / "work"
    make_runner(work, CheckpointHook(max_keep_ckpts=1, save_best="accuracy"), max_epochs=1).train()
    victim = tmp_path / "victim.pth"
    victim.write_bytes(b"user data")
    checkpoint = torch.load(work / "epoch_1.pth", weights_only=True)
    state = checkpoint["hooks"]["CheckpointHook"]
    state["kept"] = ["../victim.pth", str(victim), *state["kept"]]
    state["best"]["best_ckpt"] = "../victim.pth"
    torch.save(checkpoint, work / "crafted.pth")
    resumed = make_runner(work, CheckpointHook(max_keep_ckpts=1, save_best="accuracy"),
                          max_epochs=3, resume=work / "crafted.pth")
    resumed.train()
    assert victim.read_bytes() == b"user data"
    assert "epoch_3.pth" in pth(work)


def test_filename_tmpl_with_a_folder_is_refused():
    with pytest.raises(ConfigError, match="filename_tmpl must be a file name"):
        CheckpointHook(filename_tmpl="../escaped_{}.pth")


def test_names_from_a_checkpoint_that_are_not_the_hooks_own_are_ignored_with_a_warning(tmp_path):
    """Plain names of other files in the work dir (the log, the user's notes) are not taken
    either: only names the hook makes (its template, iter_N.pth, best_<metric>_...)."""
    work = tmp_path / "work"
    make_runner(work, CheckpointHook(max_keep_ckpts=1, save_best="accuracy"), max_epochs=1).train()
    (work / "notes.txt").write_text("mine")
    checkpoint = torch.load(work / "epoch_1.pth", weights_only=True)
    state = checkpoint["hooks"]["CheckpointHook"]
    state["kept"] = ["notes.txt", "../victim.pth", *state["kept"]]
    state["stale"] = ["log.txt"]
    state["best"]["previous"] = "/etc/passwd"
    torch.save(checkpoint, work / "crafted.pth")
    make_runner(work, CheckpointHook(max_keep_ckpts=1, save_best="accuracy"), max_epochs=3,
                resume=work / "crafted.pth").train()
    assert (work / "notes.txt").read_text() == "mine" and (work / "log.txt").exists()
    warnings = [line for line in (work / "log.txt").read_text().splitlines() if "ignored" in line]
    assert len(warnings) == 2  # the hook's names, and the best file's
    assert "'notes.txt', '../victim.pth', 'log.txt'" in warnings[0]
    assert "'/etc/passwd'" in warnings[1] and "never deleted" in warnings[1]


def test_a_deletion_an_interrupted_run_left_undone_is_finished_when_it_resumes(tmp_path):
    """keep-N writes the new file, then deletes the oldest: a kill in between leaked it."""
    make_runner(tmp_path, CheckpointHook(max_keep_ckpts=2), max_epochs=3).train()
    saved = load_checkpoint_file(tmp_path / "epoch_3.pth")["hooks"]["CheckpointHook"]
    assert saved["stale"] == ["epoch_1.pth"]  # due for deletion once epoch_3.pth was written
    (tmp_path / "epoch_1.pth").write_bytes((tmp_path / "epoch_2.pth").read_bytes())  # the leak
    make_runner(tmp_path, CheckpointHook(max_keep_ckpts=2), max_epochs=4, resume="auto").train()
    assert pth(tmp_path) == ["epoch_3.pth", "epoch_4.pth"]
    assert "removed epoch_1.pth: over max_keep_ckpts" in (tmp_path / "log.txt").read_text()


def test_a_previous_best_file_an_interrupted_run_left_is_removed_when_it_resumes(tmp_path):
    make_runner(tmp_path, CheckpointHook(save_best="accuracy"), max_epochs=2).train()
    best = next(p for p in tmp_path.glob("best_*.pth"))
    checkpoint = torch.load(best, weights_only=True)
    checkpoint["hooks"]["CheckpointHook"]["best"]["previous"] = "best_accuracy_epoch_0.pth"
    torch.save(checkpoint, best)
    (tmp_path / "best_accuracy_epoch_0.pth").write_bytes(b"an older best")
    make_runner(tmp_path, CheckpointHook(save_best="accuracy"), max_epochs=3, resume=best).train()
    assert not (tmp_path / "best_accuracy_epoch_0.pth").exists()
    assert "a previous best checkpoint an interrupted run" in (tmp_path / "log.txt").read_text()


@pytest.mark.parametrize("out_dir", [None, "checkpoints"])
def test_temp_files_of_interrupted_writes_are_removed_when_a_run_starts(tmp_path, out_dir):
    # with out_dir, the files go to out_dir/<the work dir's name>, as in MMEngine
    folder = tmp_path / out_dir / tmp_path.name if out_dir else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    ours = [".epoch_3.pth.ab_12cd9.tmp", ".latest.zz9y8x7w.tmp"]
    others = [".notes.txt.ab12cd90.tmp", ".epoch_3.pth.tmp", "epoch_3.pth.ab12cd90.tmp"]
    for name in ours + others:
        (folder / name).write_bytes(b"partial")
    make_runner(tmp_path, CheckpointHook(out_dir=out_dir and tmp_path / out_dir),
                max_epochs=1).train()
    left = sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))
    assert left == sorted(others)
    assert "removed 2 unfinished checkpoint write(s)" in (tmp_path / "log.txt").read_text()


class SampleModel(torch.nn.Module):
    """Validation returns data samples (MMEngine's val_step); the metric reports a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch):
        x, y = batch
        return [{"right": bool(p == t)} for p, t in zip(self(x).argmax(1), y)]


def test_auto_takes_the_first_reported_metric_when_a_metric_reports_under_another_name(tmp_path):
    """MMEngine's "auto" is the first key validation reports: a metric given as "acc" that
    reports "accuracy" (MMEngine's Accuracy does) must not stop the run after validation."""
    def reports_accuracy(samples):
        return {"accuracy": sum(s["right"] for s in samples) / len(samples)}

    torch.manual_seed(0)
    runner = Runner(SampleModel(), optimizer={"type": "SGD", "lr": 0.2},
                    train_dataloader=DataLoader(data(), batch_size=4),
                    val_dataloader=DataLoader(data(), batch_size=12),
                    metrics={"acc": reports_accuracy}, max_epochs=2, work_dir=tmp_path,
                    default_hooks={"logger": None, "progress": None,
                                   "checkpoint": CheckpointHook(save_best="auto")})
    runner.train()
    best = [name for name in pth(tmp_path) if name.startswith("best_")]
    assert len(best) == 1 and best[0].startswith("best_accuracy_epoch_")
    assert runner.hooks.by_key()["checkpoint"].best.key == "accuracy"


def test_out_dir_keeps_each_work_dirs_files_apart_as_mmengine_does(tmp_path):
    """MMEngine and mmcv write to out_dir/<work_dir's name>: two runs sharing an out_dir
    never replace each other's checkpoints."""
    out = tmp_path / "shared"
    for name in ("run_a", "run_b"):
        make_runner(tmp_path / name, CheckpointHook(out_dir=out), max_epochs=1).train()
    assert pth(out / "run_a") == ["epoch_1.pth"] and pth(out / "run_b") == ["epoch_1.pth"]
    assert pth(tmp_path / "run_a") == []


def test_a_misspelled_save_best_is_warned_about_before_training(tmp_path):
    """The name is checked against what validation will report (metrics keys, loss) when the
    model has no validation step of its own: a typo is said at once, not after an epoch."""
    with pytest.raises(ConfigError, match="did you mean 'accuracy'"):  # given to the Runner
        make_runner(tmp_path, CheckpointHook(save_best="acuracy", rule="greater"), max_epochs=1)
    runner = make_runner(tmp_path, None, max_epochs=1)
    runner.register_hook(CheckpointHook(save_best="acuracy", rule="greater"))  # added later
    with pytest.raises(HookError, match="save_best='acuracy' is not among the validation"):
        runner.train()
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    warned = [line for line in log.splitlines()
              if "did you mean 'accuracy'" in line and " - WARNING - " in line]
    assert len(warned) == 1 and "CheckpointHook save_best='acuracy'" in warned[0]
    quiet = make_runner(tmp_path / "ok", CheckpointHook(save_best="accuracy"), max_epochs=1)
    quiet.train()
    assert "did you mean" not in (tmp_path / "ok" / "log.txt").read_text(encoding="utf-8")
