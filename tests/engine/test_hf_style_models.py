"""Hugging Face–style models in a real Runner: dict batches, output objects, loss None,
validation metrics on variable-length batches, sample-weighted validation loss, scheduler
objects in the run header, torch.compile, and the messages that point to the working form."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from hookline import Runner
from hookline.core import ConfigError
from hookline.engine.run_header import run_header

VOCAB, DIM, CLASSES = 20, 8, 3
NOLOG = {"logger": None, "progress": None, "checkpoint": None}


@dataclasses.dataclass
class Output:
    """A model output object, as Hugging Face models return."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None


class Classifier(torch.nn.Module):
    """``forward(**batch)`` -> Output; loss None without labels."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, DIM)
        self.head = torch.nn.Linear(DIM, CLASSES)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> Output:
        logits = self.head(self.emb(input_ids).mean(1))
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return Output(loss=loss, logits=logits)


class StepClassifier(Classifier):
    def training_step(self, batch: dict[str, Any]) -> Any:
        return self(**batch)


class LossOnlyVal(StepClassifier):
    def validation_step(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {"loss": self(**batch).loss}


class TinyLM(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, DIM)
        self.head = torch.nn.Linear(DIM, VOCAB)

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        return self.head(self.emb(batch["input_ids"])).sum() * 0

    def validation_step(self, batch: dict[str, Any]) -> dict[str, Any]:
        logits = self.head(self.emb(batch["input_ids"]))
        return {"preds": logits, "targets": batch["labels"]}


def samples(n: int, length: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        size = length or 3 + i % 5
        ids = torch.randint(1, VOCAB, (size,), generator=g)
        out.append({"input_ids": ids, "label": int(ids.sum()) % CLASSES})
    return out


def collate(items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
    longest = max(len(s["input_ids"]) for s in items)
    ids = torch.zeros(len(items), longest, dtype=torch.long)
    for i, s in enumerate(items):
        ids[i, :len(s["input_ids"])] = s["input_ids"]
    return {"input_ids": ids, "labels": torch.tensor([s["label"] for s in items])}


def collate_lm(items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
    batch = collate(items)
    labels = batch["input_ids"].clone()
    labels[labels == 0] = -100
    return {"input_ids": batch["input_ids"], "labels": labels}


def no_labels(items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
    batch = collate(items)
    del batch["labels"]
    return batch


def loader(n: int = 8, batch_size: int = 4, fn: Any = collate, **kw: Any) -> DataLoader:
    return DataLoader(samples(n, **kw), batch_size=batch_size, collate_fn=fn)


def runner(model: torch.nn.Module, tmp_path: Path, **kw: Any) -> Runner:
    kw.setdefault("optimizer", {"type": "AdamW", "lr": 1e-2})
    kw.setdefault("default_hooks", NOLOG)
    return Runner(model, work_dir=str(tmp_path), **kw)


# -- finding 1: variable-length predictions ------------------------------------------------
def test_variable_length_predictions_are_a_config_error_naming_metric_and_shapes(tmp_path):
    data = DataLoader([{"input_ids": torch.arange(1, n + 1), "label": 0} for n in (6, 6, 4, 4)],
                      batch_size=2, collate_fn=collate_lm)
    r = runner(TinyLM(), tmp_path, val_dataloader=data,
               metrics={"token_acc": lambda p, t: (p.argmax(-1) == t).float().mean()})
    with pytest.raises(ConfigError) as info:
        r.val()
    text = str(info.value)
    assert "token_acc" in text and "(2, 4, 20)" in text and "(2, 6, 20)" in text
    assert "torchmetrics" in text and "flatten" in text


# -- finding 5: loss averaged over samples --------------------------------------------------
def test_validation_loss_without_targets_is_weighted_by_batch_size(tmp_path):
    torch.manual_seed(0)
    model = LossOnlyVal()
    val = loader(10, batch_size=4, length=4, seed=3)  # batches of 4, 4, 2
    got = runner(model, tmp_path, val_dataloader=val).val()["loss"]
    model.eval()
    with torch.no_grad():
        per = [(model(**b).loss.item(), len(b["labels"])) for b in val]
    assert got == pytest.approx(sum(loss * n for loss, n in per) / 10)
    assert got != pytest.approx(sum(loss for loss, _ in per) / 3)


# -- finding 6: metrics without preds / targets ---------------------------------------------
class NoTargets(StepClassifier):
    def validation_step(self, batch: dict[str, Any]) -> dict[str, Any]:
        out = self(**batch)
        return {"loss": out.loss, "preds": out.logits}


class HFNames(StepClassifier):
    def validation_step(self, batch: dict[str, Any]) -> dict[str, Any]:
        out = self(**batch)
        return {"loss": out.loss, "logits": out.logits, "labels": batch["labels"]}


def test_metrics_with_a_step_that_gives_no_targets_are_a_config_error(tmp_path):
    r = runner(NoTargets(), tmp_path, val_dataloader=loader(), metrics={"acc": "accuracy"})
    with pytest.raises(ConfigError, match=r"'acc'.*keys \['loss', 'preds'\].*'targets'"):
        r.val()


def test_hugging_face_names_logits_and_labels_feed_the_metrics(tmp_path):
    torch.manual_seed(0)
    model = HFNames()
    val = loader()
    metrics = runner(model, tmp_path, val_dataloader=val, metrics={"acc": "accuracy"}).val()
    model.eval()
    with torch.no_grad():
        hits = sum(int((model(**b).logits.argmax(1) == b["labels"]).sum()) for b in val)
    assert metrics["acc"] == pytest.approx(hits / 8)
    assert set(metrics) == {"loss", "acc"}


# -- finding 4: loss None -------------------------------------------------------------------
def test_a_loss_of_none_names_the_step_and_the_batch_keys(tmp_path):
    r = runner(StepClassifier(), tmp_path, train_dataloader=loader(fn=no_labels), max_epochs=1)
    with pytest.raises(TypeError, match=r"StepClassifier.training_step returned a loss of None"
                                        r".*labels missing.*\['input_ids'\]"):
        r.train()


# -- finding 9: output objects and messages -------------------------------------------------
def test_a_dataclass_output_from_training_step_trains(tmp_path):
    r = runner(StepClassifier(), tmp_path, train_dataloader=loader(), max_epochs=1)
    before = r.model.head.weight.detach().clone()
    r.train()
    assert set(r.outputs) == {"loss", "logits"}
    assert not torch.equal(before, r.model.head.weight)


def test_a_dataclass_without_loss_is_refused_naming_its_fields(tmp_path):
    @dataclasses.dataclass
    class LogitsOnly:
        logits: torch.Tensor

    class NoLoss(Classifier):
        def training_step(self, batch: dict[str, Any]) -> Any:
            return LogitsOnly(self(**batch).logits)

    r = runner(NoLoss(), tmp_path, train_dataloader=loader(), max_epochs=1)
    with pytest.raises(TypeError, match=r"dataclass with a 'loss' field.*got LogitsOnly with "
                                        r"keys \['logits'\]"):
        r.train()


def test_dict_batches_without_training_step_advise_training_step(tmp_path):
    r = runner(Classifier(), tmp_path, train_dataloader=loader(), max_epochs=1)
    with pytest.raises(ConfigError, match=r"dict batches.*training_step\(self, batch, batch_idx\)"):
        r.train()
    r = runner(Classifier(), tmp_path, train_dataloader=loader(), max_epochs=1,
               loss_fn=lambda out, y: out.loss)
    with pytest.raises(TypeError, match=r"got dict.*define training_step\(self, batch"):
        r.train()


def test_params_in_an_optimizer_config_says_how_groups_are_given(tmp_path):
    model = StepClassifier()
    with pytest.raises(ConfigError, match=r"param groups.*torch.optim.AdamW\(groups"):
        runner(model, tmp_path, optimizer={"type": "AdamW", "lr": 1e-3,
                                           "params": list(model.parameters())})


def test_an_optimizer_object_with_wrapper_options_names_the_working_form(tmp_path):
    model = StepClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with pytest.raises(ConfigError, match=r"optim_wrapper=\{'optimizer': <your optimizer>, "
                                          r"'clip_grad': \.\.\.\}"):
        runner(model, tmp_path, optimizer=opt, optim_wrapper={"clip_grad": {"max_norm": 1.0}})
    runner(model, tmp_path, optimizer=None,
           optim_wrapper={"optimizer": opt, "clip_grad": {"max_norm": 1.0}})  # that form works


# -- finding 2: scheduler objects in the run header -----------------------------------------
def test_the_run_header_says_how_each_scheduler_steps(tmp_path):
    model = StepClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    epochly = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: (step + 1) / 4)
    r = runner(model, tmp_path, optimizer=opt, param_scheduler=epochly,
               train_dataloader=loader(), max_epochs=1)
    assert "schedulers: LambdaLR steps per epoch (a scheduler object steps per epoch unless " \
           "it has by_epoch = False" in "\n".join(run_header(r))

    model = StepClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: (step + 1) / 4)
    warmup.by_epoch = False
    r = runner(model, tmp_path, optimizer=opt, param_scheduler=warmup,
               train_dataloader=loader(), max_epochs=1)
    assert "schedulers: LambdaLR steps per iteration" in run_header(r)
    lrs: list[float] = []
    r.on("before_train_iter", lambda runner: lrs.append(runner.optimizer.param_groups[0]["lr"]))
    r.train()
    assert lrs == pytest.approx([0.0025, 0.005])


def test_the_run_header_has_no_scheduler_line_without_schedulers(tmp_path):
    r = runner(StepClassifier(), tmp_path, train_dataloader=loader(), max_epochs=1)
    assert not any(line.startswith("schedulers:") for line in run_header(r))
