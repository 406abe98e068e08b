"""What users of torch's own hooks hit at the edges: scripted submodules (one ConfigError and no
hook left behind), models saved with hooks attached, structured outputs kept as they are,
and mistakes in the tools' arguments."""

from __future__ import annotations

import dataclasses
import io
import math

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import FeatureExtractor, GradientMonitor, HookManager, LayerProfiler
from hookline.inspect.clipping import clip_gradients


def hooks_left(model: nn.Module) -> int:
    """Forward and pre-forward hooks on the eager modules (torch keeps them private)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks)  # noqa: SLF001
               for m in model.modules() if not isinstance(m, torch.jit.ScriptModule))


def with_scripted_part() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 2), nn.ReLU(),
                         torch.jit.script(nn.Sequential(nn.Linear(2, 2), nn.ReLU())), nn.Tanh())


@pytest.mark.parametrize("build", [lambda m: LayerProfiler(m),
                                   lambda m: FeatureExtractor(m, ["0", "2.0"])])
def test_a_scripted_submodule_is_one_config_error_and_no_hook_stays(build):
    model = with_scripted_part()
    with pytest.raises(ConfigError, match="is a ScriptModule .* hook the eager module"):
        build(model)
    assert hooks_left(model) == 0  # the hooks that went on before the failure came off
    model(torch.ones(1, 2))


def test_a_fully_scripted_model_names_the_problem():
    scripted = torch.jit.script(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    with pytest.raises(ConfigError, match="the model is a ScriptModule"):
        FeatureExtractor(scripted, ["0"])


def keep(module, args, output):  # a module-level hook: picklable, as torch's users write them
    return output


def test_a_model_with_a_plain_hook_attached_still_saves_as_with_torchs_hooks():
    model = nn.Sequential(nn.Linear(2, 2))
    manager = HookManager(model)
    manager.register("0", keep)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert torch.equal(loaded(torch.ones(1, 2)), model(torch.ones(1, 2)))
    manager.remove()
    assert hooks_left(model) == 0


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    label: str = "x"


class Structured(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return Out(self.lin(x)), torch.max(x, 1)


class Wrap(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Structured()

    def forward(self, x):
        return self.inner(x)


def test_features_keep_dataclasses_and_return_types_detached():
    model = Wrap()
    with FeatureExtractor(model, ["inner"]) as extractor:
        model(torch.randn(2, 3, requires_grad=True))
    out, best = extractor.features["inner"]
    assert isinstance(out, Out) and out.label == "x"
    assert out.logits.grad_fn is None  # detached: no graph kept alive
    assert type(best).__name__ == "max" and best.values.shape == (2,)


@pytest.mark.parametrize(("layers", "message"), [
    (None, "layers must be a layer name, a list"),
    (5, "layers must be a layer name, a list"),
    ({"0": None}, "keys must be non-empty strings"),
    ({"0": "f", "2": "f"}, "maps several layers to the key 'f'"),
])
def test_feature_extractor_mistakes_are_config_errors(layers, message):
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    with pytest.raises(ConfigError, match=message):
        FeatureExtractor(model, layers)
    assert hooks_left(model) == 0


@pytest.mark.parametrize("kwargs", [{"vanish": "1e-3"}, {"explode": None},
                                    {"vanish": math.nan}, {"explode": True}])
def test_gradient_monitor_thresholds_must_be_numbers(kwargs):
    with pytest.raises(ConfigError, match="GradientMonitor .* must be a number"):
        GradientMonitor(nn.Linear(2, 2), **kwargs)


@pytest.mark.parametrize("max_norm", [True, math.nan, math.inf, 0, -1.0])
def test_clip_gradients_needs_a_positive_finite_norm(max_norm):
    with pytest.raises(ConfigError, match="max_norm must be a positive finite number"):
        clip_gradients(nn.Linear(2, 2), max_norm=max_norm)
