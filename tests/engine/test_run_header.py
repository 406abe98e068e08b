"""The run header train() logs: model, parameters, device and precision, data sizes,
work_dir; the hook table in log.txt only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

from hookline import Runner
from hookline.engine.run_header import human_count, run_header

from .toy import make_runner

TIMESTAMP = r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} - hookline - INFO - "


def test_train_logs_the_header_to_console_and_file_and_the_hook_table_to_the_file_only(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runner = make_runner(tmp_path, max_epochs=1, default_hooks={"progress": None})
    runner.train()
    out = capsys.readouterr().out
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    header = [
        f"model: Net, 163 parameters (163 trainable); {runner.device}, float32",  # 6*16+16 + 16*3+3
        "data: train 60 samples, 8 batches per epoch; val 60 samples; test none",
        "batches: train fast path (indexing a TensorDataset); val fast path (indexing a "
        "TensorDataset); test none",
        "schedulers: StepLR steps per iteration",
        f"work_dir: {tmp_path}",
    ]
    for text in (out, log):
        lines = text.splitlines()
        at = next(i for i, line in enumerate(lines) if "model: Net" in line)
        assert [re.sub(TIMESTAMP, "", line) for line in lines[at:at + 5]] == header, text
        assert all(re.match(TIMESTAMP, line) for line in lines[at:at + 5])
        assert "Epoch(train) [1][5/8]" in text  # the header comes before the first log line
        assert text.index("model: Net") < text.index("Epoch(train)")
    assert "hooks by stage:" in log and "after_train_iter" in log
    assert "hooks by stage:" not in out and "after_train_iter" not in out


def test_val_and_test_log_no_header(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    make_runner(tmp_path, max_epochs=1).val()
    assert "model:" not in capsys.readouterr().out


def test_amp_precision_and_frozen_parameters(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(100, 100), torch.nn.Linear(100, 20))
    model[0].requires_grad_(False)
    runner = Runner(model, optim_wrapper={"type": "AmpOptimWrapper", "dtype": "bfloat16",
                                          "optimizer": {"type": "SGD", "lr": 0.1}},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=2, device="cpu",
                    train_dataloader=DataLoader([(torch.zeros(100), 0)] * 10, batch_size=4),
                    work_dir=tmp_path)
    assert run_header(runner)[0] == ("model: Sequential, 12.1 K parameters (2.0 K trainable); "
                                     "cpu, AMP bfloat16")
    assert run_header(runner)[1] == ("data: train 10 samples, 3 batches per epoch; val none; "
                                     "test none")


class Stream(IterableDataset):
    def __iter__(self):
        return iter([(torch.zeros(4), 0)] * 6)


def test_sizes_that_cannot_be_known_are_said_unknown(tmp_path: Path) -> None:
    runner = Runner(torch.nn.LazyLinear(2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, device="cpu",
                    train_dataloader=DataLoader([(torch.zeros(4), 0)] * 6, batch_size=2),
                    val_dataloader=DataLoader(Stream(), batch_size=2), work_dir=tmp_path)
    model_line, data_line, batches_line, _ = run_header(runner)
    assert model_line == "model: LazyLinear, parameters not yet known (lazy modules); cpu, float32"
    assert data_line == ("data: train 6 samples, 3 batches per epoch; val size unknown "
                         "(IterableDataset); test none")
    assert batches_line == ("batches: train DataLoader (list has no __getitems__); val "
                            "DataLoader (Stream is an IterableDataset); test none")


@pytest.mark.parametrize("number, text", [
    (0, "0"), (999, "999"), (1000, "1.0 K"), (12_345, "12.3 K"), (999_949, "999.9 K"),
    (999_999, "1.0 M"), (3_400_000, "3.4 M"), (7_000_000_000, "7.0 B"),
    (1_500_000_000_000, "1.5 T"),
])
def test_human_count(number: int, text: str) -> None:
    assert human_count(number) == text
