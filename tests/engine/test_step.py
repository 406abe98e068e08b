"""The model step contract: ``training_step(batch)`` models, ``loss_fn(model(x), y)`` models,
MMEngine's ``train_step(data, optim_wrapper)`` models, and the errors for anything else."""

from __future__ import annotations

import collections

import pytest
import torch
import torch.nn.functional as F

from hookline import ConfigError
from hookline.engine import AmpOptimWrapper, OptimWrapper
from hookline.engine.step import check_contract, make_step, make_train_step, run_step


def batch(rows: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(rows, 3, generator=generator), torch.tensor([0, 1, 1, 0][:rows])


class Plain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x)


class Returns(Plain):
    """``training_step`` / ``validation_step`` return whatever the test sets."""

    def __init__(self, value) -> None:
        super().__init__()
        self.value = value

    def training_step(self, data):
        return self.value(self, data) if callable(self.value) else self.value

    def validation_step(self, data):
        return self.value(self, data) if callable(self.value) else self.value


# -- training_step models ------------------------------------------------------------------------

def test_a_tensor_returned_by_training_step_becomes_the_loss():
    loss = torch.tensor(0.5)
    assert make_step(Returns(loss), None, "train")(batch()) == {"loss": loss}


def test_a_dict_returned_by_training_step_is_kept_with_its_extras():
    model = Returns(lambda m, data: {"loss": F.cross_entropy(m(data[0]), data[1]),
                                     "acc": torch.tensor(0.75)})
    outputs = make_step(model, None, "train")(batch())
    assert set(outputs) == {"loss", "acc"} and type(outputs) is dict
    x, y = batch()
    assert torch.equal(outputs["loss"], F.cross_entropy(model(x), y))


@pytest.mark.parametrize(("value", "kind"), [([1.0], "list"), ({"acc": torch.tensor(1.0)}, "dict")])
def test_training_step_must_return_a_dict_with_a_loss(value, kind):
    step = make_step(Returns(value), None, "train")
    with pytest.raises(TypeError, match=f"Returns.training_step must return a loss tensor or a "
                                        f"dict with a 'loss' entry.*got {kind}"):
        step(batch())


def test_validation_step_may_return_a_dict_without_a_loss():
    outputs = {"preds": torch.zeros(4, 2), "targets": torch.zeros(4)}
    assert make_step(Returns(outputs), None, "val")(batch()) == outputs
    with pytest.raises(TypeError, match="Returns.validation_step must return a loss tensor or a dict"):
        make_step(Returns(1.0), None, "val")(batch())


def test_validation_steps_may_return_lists_of_data_samples():
    samples = [{"pred": 1}, {"pred": 0}]
    assert make_step(Returns(tuple(samples)), None, "val")(batch()) == samples


def test_test_mode_falls_back_to_loss_fn_when_the_model_has_no_test_step():
    model = Returns(torch.tensor(0.5))  # has training_step / validation_step, not test_step
    outputs = make_step(model, F.cross_entropy, "test")(batch())
    assert set(outputs) == {"preds", "targets", "loss"}


# -- loss_fn models ------------------------------------------------------------------------------

def test_loss_fn_models_train_on_input_target_pairs():
    model = Plain()
    x, y = batch()
    outputs = make_step(model, F.cross_entropy, "train")((x, y))
    assert set(outputs) == {"loss"}
    assert torch.equal(outputs["loss"], F.cross_entropy(model(x), y))
    assert outputs["loss"].requires_grad
    assert torch.equal(make_step(model, F.cross_entropy, "train")([x, y])["loss"], outputs["loss"])


def test_loss_fn_models_evaluate_to_preds_targets_and_loss():
    model = Plain()
    x, y = batch()
    outputs = run_step(model, F.cross_entropy, (x, y), "val")
    assert set(outputs) == {"preds", "targets", "loss"}
    assert torch.equal(outputs["preds"], model(x)) and outputs["targets"] is y
    assert set(run_step(model, None, (x, y), "test")) == {"preds", "targets"}  # no loss_fn


@pytest.mark.parametrize("bad", [batch()[0], (batch()[0],), (*batch(), batch()[1]),
                                 {"x": batch()[0], "y": batch()[1]}])
def test_a_batch_that_is_not_a_pair_is_a_type_error_naming_the_alternatives(bad):
    step = make_step(Plain(), F.cross_entropy, "train")
    with pytest.raises(TypeError, match=r"batches must be \(inputs, targets\) pairs, got "
                                        f"{type(bad).__name__}") as info:
        step(bad)
    assert "Plain has no training_step(batch)" in str(info.value)


def test_without_test_step_or_loss_fn_the_test_runs_validation_step():
    """MMEngine's test_step defaults to val_step's way; with a loss_fn, the loss_fn path is
    used as before (test_test_mode_falls_back_to_loss_fn_when_the_model_has_no_test_step)."""
    class DictModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(3, 2)

        def validation_step(self, batch):
            return {"loss": F.cross_entropy(self.layer(batch["x"]), batch["y"])}

    x, y = batch()
    outputs = run_step(DictModel(), None, {"x": x, "y": y}, "test")
    assert set(outputs) == {"loss"}
    with pytest.raises(TypeError, match=r"DictModel has no training_step\(batch\)"):
        run_step(DictModel(), None, {"x": x, "y": y}, "train")


# -- check_contract ------------------------------------------------------------------------------

def test_check_contract_needs_a_loss_fn_or_a_step_method():
    with pytest.raises(ConfigError, match="Plain has no training_step") as info:
        check_contract(Plain(), None)
    assert "train_step(data, optim_wrapper)" in str(info.value) and "loss_fn=" in str(info.value)
    check_contract(Plain(), F.cross_entropy)
    check_contract(Returns(torch.tensor(0.0)), None)
    check_contract(MMEngineStyle(), None)


# -- make_train_step -----------------------------------------------------------------------------

class MMEngineStyle(Plain):
    """MMEngine's BaseModel contract: the model runs its own update."""

    def __init__(self, result=None) -> None:
        super().__init__()
        self.calls: list[tuple] = []
        self.result = result

    def train_step(self, data, optim_wrapper):
        self.calls.append((data, optim_wrapper))
        x, y = data
        with optim_wrapper.optim_context(self):
            loss = F.cross_entropy(self(x), y)
        optim_wrapper.update_params(loss)
        return {"loss": loss.detach()} if self.result is None else self.result


def test_make_train_step_lets_an_mmengine_model_update_itself_with_the_wrapper():
    model = MMEngineStyle()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    before = model.linear.weight.detach().clone()
    data = batch()
    outputs = make_train_step(model, None, wrapper)(data)
    assert model.calls == [(data, wrapper)]
    assert set(outputs) == {"loss"} and not torch.equal(before, model.linear.weight)


def test_make_train_step_wraps_a_tensor_from_train_step_and_refuses_other_results():
    loss = torch.tensor(0.25)
    model = MMEngineStyle(result=loss)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    assert make_train_step(model, None, wrapper)(batch()) == {"loss": loss}
    named = collections.OrderedDict(loss=loss)
    assert make_train_step(MMEngineStyle(result=named), None, wrapper)(batch()) == {"loss": loss}
    with pytest.raises(TypeError, match=r"MMEngineStyle.train_step\(data, optim_wrapper\) must "
                                        "return a dict.*got list"):
        make_train_step(MMEngineStyle(result=[loss]), None, wrapper)(batch())


def test_make_train_step_runs_forward_loss_and_update_for_other_models():
    model = Plain()
    reference = Plain()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = batch()
    outputs = make_train_step(model, F.cross_entropy, wrapper)((x, y))
    F.cross_entropy(reference(x), y).backward()
    with torch.no_grad():
        for p in reference.parameters():
            p -= 0.1 * p.grad
    assert torch.allclose(model.linear.weight, reference.linear.weight)
    assert torch.allclose(outputs["loss"], F.cross_entropy(Plain()(x), y))


def test_make_train_step_runs_the_forward_under_the_wrappers_autocast():
    seen: list[torch.dtype] = []
    model = Plain()
    model.linear.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    make_train_step(model, F.cross_entropy, wrapper)(batch())
    assert seen == [torch.bfloat16]
