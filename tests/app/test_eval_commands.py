"""``hookline test`` / ``hookline val`` / ``hookline train --test`` on real demo runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from hookline.app.eval_commands import checkpoint_of_run, checkpoint_weights, pick_checkpoint
from hookline.app.run_dirs import run_dirs
from hookline.cli import main
from hookline.core import ConfigError
from hookline.demo.model import DigitsCNN
from hookline.demo.registry import DigitsDataset
from hookline.engine.checkpoint import load_checkpoint_file

QUIET = ["--set", "default_hooks.progress=null", "--set", "default_hooks.logger.interval=45"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(code: int, err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def evaluate(weights: dict, split: str = "test") -> tuple[float, float]:
    """Loss and accuracy of the demo model with ``weights``, computed by hand."""
    model = DigitsCNN()
    model.load_state_dict(weights)
    model.eval()
    images, labels = DigitsDataset(split).tensors
    with torch.no_grad():
        logits = model(images)
    loss = torch.nn.functional.cross_entropy(logits, labels).item()
    return loss, (logits.argmax(1) == labels).float().mean().item()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A work dir with one 2-epoch demo run (trained with --test)."""
    work_dir = tmp_path_factory.mktemp("eval") / "out"
    assert main(["train", "--work-dir", str(work_dir), "--set", "max_epochs=2", "--test", *QUIET]) == 0
    return work_dir


def test_train_with_test_evaluates_the_best_checkpoint_after_training(trained, capsys):
    capsys.readouterr()
    [run_dir] = run_dirs(trained)
    [best] = run_dir.glob("best_accuracy_epoch_*.pth")
    report = json.loads((run_dir / "eval" / f"test_{best.stem}.json").read_text())
    assert report["split"] == "test" and report["samples"] == 178
    assert report["checkpoint"] == str(best) and report["weights"] == "model weights"
    loss, accuracy = evaluate(load_checkpoint_file(best)["state_dict"])
    assert report["metrics"]["accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert report["metrics"]["loss"] == pytest.approx(loss, rel=1e-5)
    # training did not warn about an unused test_dataloader: --test used it
    assert "test_dataloader is not used" not in (run_dir / "log.txt").read_text()


def test_hookline_test_and_val_pick_best_latest_or_a_path(trained, capsys):
    [run_dir] = run_dirs(trained)
    code, out, err = run(capsys, "test", "--work-dir", str(trained))
    assert code == 0, err
    metrics_line, saved_line = out.strip().splitlines()[-2:]
    [best] = run_dir.glob("best_accuracy_epoch_*.pth")
    assert metrics_line.startswith("test: loss ") and ", accuracy " in metrics_line
    assert f"on 178 samples (model weights of {best}, epoch " in metrics_line
    assert saved_line == f"saved to {run_dir / 'eval' / f'test_{best.stem}.json'}"

    # val of the newest checkpoint reproduces the run's last validation exactly
    code, out, err = run(capsys, "val", "--work-dir", str(trained), "--checkpoint", "latest")
    assert code == 0, err
    last_val = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()
                if '"val"' in line][-1]
    saved = json.loads((run_dir / "eval" / "val_epoch_2.json").read_text())
    assert saved["metrics"]["accuracy"] == pytest.approx(last_val["accuracy"])
    assert saved["metrics"]["loss"] == pytest.approx(last_val["loss"], rel=1e-5)
    assert saved["samples"] == 181 and saved["epoch"] == 2 and saved["iter"] == 90

    code, out, err = run(capsys, "test", "--checkpoint", str(run_dir / "epoch_1.pth"),
                         "--set", "test_dataloader.batch_size=7")
    assert code == 0, err
    report = json.loads((run_dir / "eval" / "test_epoch_1.json").read_text())
    loss, accuracy = evaluate(load_checkpoint_file(run_dir / "epoch_1.pth")["state_dict"])
    assert report["metrics"]["accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert report["metrics"]["loss"] == pytest.approx(loss, rel=1e-5)
    assert {p.name for p in run_dir.glob("*.pth")} == {best.name, "epoch_1.pth", "epoch_2.pth"}


def test_missing_test_data_or_checkpoints_are_one_line_errors(trained, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(*run(capsys, "test")[::2], "no checkpoint found", "work_dirs/demo",
                   "--checkpoint best, latest or the path")
    one_line_error(*run(capsys, "test", "--checkpoint", "nope.pth")[::2],
                   "checkpoint 'nope.pth' not found")
    one_line_error(*run(capsys, "test", "--work-dir", str(trained), "--set", "test_dataloader=null")[::2],
                   "hookline test needs a test_dataloader in the config")
    one_line_error(*run(capsys, "val", "--work-dir", str(trained), "--set", "val_dataloader=null")[::2],
                   "hookline val needs a val_dataloader")
    one_line_error(*run(capsys, "train", "--test", "--set", "test_dataloader=null")[::2],
                   "hookline train --test needs a test_dataloader")
    (tmp_path / "broken.pth").write_bytes(b"not a checkpoint")
    one_line_error(*run(capsys, "test", "--checkpoint", "broken.pth")[::2], "broken.pth")
    saved_eval_config = next(trained.glob("*/eval/config.yaml"))
    before = saved_eval_config.read_bytes()
    one_line_error(*run(capsys, "test", "--checkpoint", str(next(trained.glob("*/epoch_2.pth"))),
                        "--set", "model.num_classes=5")[::2], "does not fit this run's model")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.pth"]  # nothing written
    assert saved_eval_config.read_bytes() == before  # not even the eval folder's config
    # a checkpoint that does not fit leaves no eval folder beside it
    copy = tmp_path / "copied_run"
    copy.mkdir()
    shutil.copy(next(trained.glob("*/epoch_2.pth")), copy / "epoch_2.pth")
    one_line_error(*run(capsys, "test", "--checkpoint", str(copy / "epoch_2.pth"),
                        "--set", "model.num_classes=5")[::2], "does not fit this run's model")
    assert sorted(p.name for p in copy.iterdir()) == ["epoch_2.pth"]


def test_the_best_checkpoint_of_a_run(tmp_path):
    with pytest.raises(ConfigError, match="no latest checkpoint"):
        checkpoint_of_run(tmp_path, None)
    (tmp_path / "epoch_3.pth").write_bytes(b"x")
    (tmp_path / "latest").write_text("epoch_3.pth\n")
    assert checkpoint_of_run(tmp_path, None) == tmp_path / "epoch_3.pth"
    with pytest.raises(ConfigError, match="no best checkpoint"):
        checkpoint_of_run(tmp_path, "best")
    # an interrupted run may leave the previous best beside the new one: the newest is the best
    for name in ("best_accuracy_epoch_2.pth", "best_accuracy_epoch_10.pth"):
        (tmp_path / name).write_bytes(b"x")
    assert checkpoint_of_run(tmp_path, "best") == tmp_path / "best_accuracy_epoch_10.pth"
    assert checkpoint_of_run(tmp_path, "latest") == tmp_path / "epoch_3.pth"
    assert pick_checkpoint(tmp_path, None) == tmp_path / "best_accuracy_epoch_10.pth"
    (tmp_path / "best_loss_epoch_4.pth").write_bytes(b"x")
    with pytest.raises(ConfigError, match="several metrics"):
        checkpoint_of_run(tmp_path, None)


def test_a_checkpoint_with_ema_weights_is_evaluated_with_them(tmp_path, capsys):
    work_dir = tmp_path / "ema"
    code, _, err = run(capsys, "train", "--work-dir", str(work_dir), "--set", "max_epochs=1",
                       "--set", "hooks=[{type: EMAHook, decay: 0.9}]", *QUIET)
    assert code == 0, err
    code, out, err = run(capsys, "test", "--work-dir", str(work_dir), "--checkpoint", "latest")
    assert code == 0, err
    assert "(EMA weights of " in out.strip().splitlines()[-2]
    [run_dir] = run_dirs(work_dir)
    checkpoint = load_checkpoint_file(run_dir / "epoch_1.pth")
    weights, kind = checkpoint_weights(checkpoint)
    assert kind == "EMA weights"
    report = json.loads((run_dir / "eval" / "test_epoch_1.json").read_text())
    ema_loss, _ = evaluate(weights)
    raw_loss, _ = evaluate(checkpoint["state_dict"])
    assert report["metrics"]["loss"] == pytest.approx(ema_loss, rel=1e-5)
    assert abs(ema_loss - raw_loss) > 1e-4  # the raw weights would have given another result


def test_help_lists_the_evaluation_commands(capsys):
    assert main(["--help"]) == 0
    assert "hookline test " in capsys.readouterr().out
    for name in ("test", "val"):
        assert main([name, "--help"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: hookline {name}")
        assert "--checkpoint best|latest|PATH" in out and "--work-dir" in out
