"""Evaluator and metrics: exact over the whole epoch (not a mean of batch means), the loss
averaged per sample, torchmetrics metrics, the metric names, and errors that say what failed."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import METRICS, ConfigError, Runner
from hookline.engine.evaluator import Evaluator
from hookline.engine.metrics import accuracy, build_metrics, mse


def outputs(preds, targets, loss=None) -> dict:
    out = {"preds": torch.tensor(preds), "targets": torch.tensor(targets)}
    if loss is not None:
        out["loss"] = torch.tensor(loss)
    return out


def test_accuracy_is_exact_over_the_epoch_not_a_mean_of_batch_means():
    evaluator = Evaluator({"acc": accuracy})
    # batch 1: 3 samples, all right; batch 2: 1 sample, wrong -> 3/4 (mean of means: 1/2)
    evaluator.process(outputs([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]], [1, 0, 1]))
    evaluator.process(outputs([[1.0, 0.0]], [1]))
    assert evaluator.compute() == {"acc": pytest.approx(0.75)}


def test_the_loss_is_averaged_per_sample():
    evaluator = Evaluator({})
    evaluator.process(outputs([[0.0, 1.0]] * 3, [1, 1, 1], loss=1.0))
    evaluator.process(outputs([[0.0, 1.0]], [1], loss=5.0))
    assert evaluator.compute() == {"loss": pytest.approx(2.0)}  # (3 * 1 + 1 * 5) / 4


def test_other_scalar_outputs_are_averaged_and_non_scalars_ignored():
    evaluator = Evaluator({"acc": accuracy})
    out = outputs([[0.0, 1.0], [0.0, 1.0]], [1, 0], loss=0.5)
    out.update(extra=torch.tensor(4.0), logits=torch.zeros(2, 2), name="x")
    evaluator.process(out)
    result = evaluator.compute()
    assert result == {"loss": pytest.approx(0.5), "extra": pytest.approx(4.0),
                      "acc": pytest.approx(0.5)}
    assert all(isinstance(v, float) for v in result.values())


def test_reset_starts_a_new_epoch():
    evaluator = Evaluator({"acc": accuracy})
    evaluator.process(outputs([[0.0, 1.0]], [0], loss=3.0))
    evaluator.reset()
    evaluator.process(outputs([[0.0, 1.0]], [1], loss=1.0))
    assert evaluator.compute() == {"loss": pytest.approx(1.0), "acc": pytest.approx(1.0)}


def test_no_batches_give_no_metrics():
    assert Evaluator({"acc": accuracy}).compute() == {}


def test_a_callable_metric_sees_the_whole_epoch_at_once():
    seen: list[tuple] = []

    def count(preds, targets):
        seen.append((tuple(preds.shape), tuple(targets.shape)))
        return len(targets)

    evaluator = Evaluator({"count": count})
    evaluator.process(outputs([[0.0, 1.0]] * 3, [1, 1, 1]))
    evaluator.process(outputs([[0.0, 1.0]] * 2, [0, 1]))
    assert evaluator.compute() == {"count": 5.0} and seen == [((5, 2), (5,))]


def test_a_torchmetrics_metric_is_updated_per_batch_and_matches_accuracy():
    torchmetrics = pytest.importorskip("torchmetrics")
    metric = torchmetrics.classification.MulticlassAccuracy(num_classes=2, average="micro")
    evaluator = Evaluator({"tm": metric, "acc": accuracy})
    generator = torch.Generator().manual_seed(0)
    for size in (5, 3, 8):
        evaluator.process({"preds": torch.randn(size, 2, generator=generator),
                           "targets": torch.randint(0, 2, (size,), generator=generator)})
    result = evaluator.compute()
    assert result["tm"] == pytest.approx(result["acc"])
    evaluator.reset()  # resets the metric too
    evaluator.process(outputs([[0.0, 1.0]], [1]))
    assert evaluator.compute()["tm"] == pytest.approx(1.0)


def test_mse_metric():
    assert mse(torch.tensor([1.0, 3.0]), torch.tensor([1, 1])).item() == pytest.approx(2.0)


def test_a_failing_metric_names_itself_and_the_shapes():
    def broken(preds, targets):
        raise IndexError("bad index")

    evaluator = Evaluator({"broken": broken})
    evaluator.process(outputs([[0.0, 1.0]] * 3, [1, 1, 1]))
    with pytest.raises(RuntimeError, match=r"metric 'broken' failed on preds \(3, 2\) and "
                                           r"targets \(3,\): bad index"):
        evaluator.compute()


# -- build_metrics -------------------------------------------------------------------------------

def test_build_metrics_takes_registered_names_and_callables():
    def custom(preds, targets):
        return 0.0

    built = build_metrics({"acc": "accuracy", "err": "mse", "mine": custom})
    assert built == {"acc": accuracy, "err": mse, "mine": custom}
    assert build_metrics(None) == {}
    assert {"accuracy", "mse"} <= set(METRICS.names())


def test_build_metrics_errors_are_config_errors():
    with pytest.raises(ConfigError, match="did you mean 'accuracy'"):
        build_metrics({"acc": "acuracy"})
    with pytest.raises(ConfigError, match="metric 'n' must be callable"):
        build_metrics({"n": 3})
    with pytest.raises(ConfigError, match="metrics must be a dict"):
        build_metrics(["accuracy"])


def test_lists_of_data_samples_reach_each_metric_once_per_epoch():
    calls = []

    def accuracy(samples):
        calls.append(len(samples))
        return sum(s["pred"] == s["gt"] for s in samples) / len(samples)

    evaluator = Evaluator({"acc": accuracy, "counts": lambda samples: {"n": len(samples)}})
    evaluator.process([{"pred": 1, "gt": 1}, {"pred": 0, "gt": 1}])
    evaluator.process(({"pred": 1, "gt": 1},))
    assert evaluator.evaluate(3) == {"acc": pytest.approx(2 / 3), "n": 3.0}
    assert calls == [3] and evaluator.compute() == {}  # evaluate() reset it


def test_a_step_returning_something_else_is_a_clear_error():
    with pytest.raises(TypeError, match="a dict or a list of data samples"):
        Evaluator({}).process(3.0)


def test_a_registered_metric_returning_a_dict_logs_each_number(tmp_path):
    """``@METRICS.register()`` from the top-level package; a dict result gives one metric per
    key (precision and recall from one function)."""
    @METRICS.register(name="test_precision_recall", force=True)
    def precision_recall(preds, targets):
        hits = preds.argmax(1) == targets
        return {"precision": hits.float().mean(), "recall": float(hits.float().mean())}

    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, work_dir=tmp_path,
                    train_dataloader=DataLoader(data, batch_size=4),
                    val_dataloader=DataLoader(data, batch_size=8),
                    metrics={"pr": "test_precision_recall"},
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner.train()
    metrics = runner.val_loop.last_metrics
    assert {"precision", "recall", "loss"} <= set(metrics) and "pr" not in metrics
    assert metrics["precision"] == metrics["recall"]


def test_offline_evaluate_gives_the_metrics_of_saved_data_samples_in_chunks():
    """MMEngine's ``offline_evaluate(data_samples, data=None, chunk_size=1)``: predictions saved
    earlier, evaluated as one pass would, in chunks; a wrong chunk size or data is one error."""
    seen: list[int] = []

    def correct(samples):
        seen.append(len(samples))
        return {"correct": sum(s["pred"] == s["label"] for s in samples) / len(samples)}

    samples = [{"pred": i % 2, "label": 0} for i in range(5)]
    evaluator = Evaluator({"c": correct})
    assert evaluator.offline_evaluate(samples, chunk_size=2) == {"correct": 0.6}
    assert seen == [5]  # one call over every sample, as after a whole pass
    with pytest.raises(ConfigError, match="chunk_size must be an int >= 1"):
        evaluator.offline_evaluate(samples, chunk_size=0)
    with pytest.raises(ConfigError, match="data has 2 entries and data_samples 5"):
        evaluator.offline_evaluate(samples, data=[1, 2])
