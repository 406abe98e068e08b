"""What ``hookline inspect`` runs: the model (import path or registry name, ``--model-args``) and its inputs.

* MODEL is ``package.module:ClassOrFactory`` (dotted attribute paths allowed)
  or a name registered in ``MODELS`` (the demo's ``DigitsCNN``, registered
  by ``hookline.demo.registry``, which is imported for the lookup).
  ``--model-args`` is a JSON object of keyword arguments for it.
* The inputs: for the demo's ``DigitsCNN`` with no ``--input-size`` and no
  ``--dtypes``, the first :data:`DEMO_BATCH` images of the demo's
  ``DigitsDataset("val")`` and their labels (the loss of ``--grad`` is the
  cross-entropy against them). Otherwise synthetic inputs of ``--input-size``:
  floating-point ones are ``torch.randn`` from a generator seeded with 0, and
  integer and bool ones (``--dtypes long``) are zeros, a valid index into any
  ``nn.Embedding`` whatever its size.

Example::

    >>> from hookline.app.inspect_inputs import parse_dtypes, parse_model_args
    >>> parse_model_args('{"vocab": 100}'), parse_dtypes("float,long", 2)
    ({'vocab': 100}, [torch.float32, torch.int64])
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError
from hookline.core.errors import closest_names
from hookline.core.registry import check_call
from hookline.inspect import DTYPE_NAMES, parse_dtype

DEFAULT_MODEL = "hookline.demo.model:DigitsCNN"
DEMO_BATCH = 16
MODEL_ARGS_EXAMPLE = '\'{"num_classes": 5}\''
_DEMO_REGISTRY = "hookline.demo.registry"  # registers DigitsCNN and DigitsDataset


def parse_model_args(text: str | None) -> dict[str, Any]:
    """``--model-args``: a JSON object of keyword arguments; else a ConfigError showing an example."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--model-args must be a JSON object of the model's keyword arguments, like "
                          f"{MODEL_ARGS_EXAMPLE}; {text!r} is not JSON ({err.msg} at character "
                          f"{err.pos})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--model-args must be a JSON object of the model's keyword arguments, like "
                          f"{MODEL_ARGS_EXAMPLE}; got a JSON {type(value).__name__}: {text!r}")
    return value


def parse_dtypes(text: str | None, inputs: int) -> list[torch.dtype] | None:
    """``--dtypes``: one name per input, comma-separated (one name alone: every input)."""
    if text is None:
        return None
    names = [n.strip() for n in str(text).split(",")]
    if any(not n for n in names):
        raise ConfigError(f"--dtypes must be dtype names separated by commas, like 'long' or 'float,long' "
                          f"(accepted: {', '.join(DTYPE_NAMES)}), got {text!r}")
    dtypes = [parse_dtype(n, "--dtypes") for n in names]
    if len(dtypes) == 1:
        return dtypes * inputs
    if len(dtypes) != inputs:
        raise ConfigError(f"--dtypes gives {len(dtypes)} dtypes for {inputs} input(s) of --input-size: "
                          "give one per input, or one for all")
    return dtypes


def parse_input_size(text: str) -> list[tuple[int, ...]]:
    """``"1,1,8,8"`` -> ``[(1, 1, 8, 8)]``; ``"2,5;2,3"`` -> two inputs."""
    sizes = []
    for part in str(text).split(";"):
        dims = [d.strip() for d in part.replace("x", ",").split(",")]
        try:  # every part a number: "1,,8" or "8x" is a mistake, not a shorter shape
            size = tuple(int(d) for d in dims)
        except ValueError:
            size = ()
        if not size or any(d <= 0 for d in size):
            raise ConfigError("--input-size must be positive integers separated by commas, like 1,1,8,8 "
                              f"(';' between several inputs), got {text!r}")
        sizes.append(size)
    return sizes


def _registered(name: str) -> Any:
    try:
        importlib.import_module(_DEMO_REGISTRY)
    except ImportError:  # an installation without the demo: the registry has what the user registered
        pass
    from hookline.engine.registries import MODELS  # noqa: PLC0415 - only for registry names

    try:
        return MODELS.get(name)
    except ConfigError as err:
        raise ConfigError(f"MODEL {name!r} is neither 'package.module:ClassOrFactory' nor a registered "
                          f"model: {err} (a model your own module registers: name that module, "
                          f"e.g. my_project:{name})") from None


def _imported(spec: str) -> Any:
    module_name, attr_path = spec.split(":")
    if not module_name or not attr_path:
        raise ConfigError(f"MODEL must look like 'package.module:ClassOrFactory' or be a registered model "
                          f"name, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"cannot import module {module_name!r} of MODEL {spec!r}: {err}") from None
    target: Any = module
    for part in attr_path.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_") and callable(getattr(target, n, None))]
            close = closest_names(part, names)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(f"{module_name!r} has no attribute {attr_path!r} (MODEL {spec!r}){hint}")
        target = getattr(target, part)
    return target


def load_model(spec: str, model_args: dict[str, Any] | None = None) -> nn.Module:
    """Build the model MODEL names, called with ``model_args`` (checked against its signature first)."""
    if not isinstance(spec, str) or spec.count(":") > 1 or not spec.strip():
        raise ConfigError(f"MODEL must look like 'package.module:ClassOrFactory' or be a registered model "
                          f"name, got {spec!r}")
    if ":" not in spec and "." in spec:
        raise ConfigError(f"MODEL must look like 'package.module:ClassOrFactory' (a colon before the class), "
                          f"got {spec!r}")
    target = _imported(spec) if ":" in spec else _registered(spec)
    kwargs = model_args or {}
    if isinstance(target, nn.Module):
        if kwargs:
            raise ConfigError(f"MODEL {spec!r} is a module instance: --model-args has nothing to call")
        return target
    if not callable(target):
        raise ConfigError(f"MODEL {spec!r} is a {type(target).__name__}, not a class or factory")
    if kwargs:  # names it does not take, or required ones missing, before anything is built
        check_call(target, kwargs, f"MODEL {spec!r} (--model-args)")
    try:
        model = target(**kwargs)
    except TypeError as err:
        what = "with --model-args " + json.dumps(kwargs) if kwargs else "with no arguments"
        raise ConfigError(f"MODEL {spec!r} cannot be called {what}: {err}") from None
    if not isinstance(model, nn.Module):
        raise ConfigError(f"MODEL {spec!r} returned a {type(model).__name__}, not an nn.Module")
    return model


def is_demo_model(model: nn.Module) -> bool:
    """The demo's DigitsCNN (whatever its ``num_classes``): it can run on real demo images."""
    return type(model).__module__ == "hookline.demo.model" and type(model).__name__ == "DigitsCNN"


def demo_batch(size: int = DEMO_BATCH) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``size`` images of the demo's ``DigitsDataset("val")`` and their labels."""
    registry = importlib.import_module(_DEMO_REGISTRY)
    dataset = registry.DigitsDataset("val")
    images, labels = dataset.tensors
    return images[:size], labels[:size]


def synthetic_inputs(sizes: list[tuple[int, ...]], dtypes: list[torch.dtype] | None,
                     device: torch.device) -> list[torch.Tensor]:
    """Seeded ``randn`` floats; zeros for integer and bool dtypes (valid embedding indices)."""
    generator = torch.Generator().manual_seed(0)
    kinds = dtypes or [torch.float32] * len(sizes)
    return [torch.randn(size, generator=generator).to(device=device, dtype=dtype) if dtype.is_floating_point
            else torch.zeros(size, dtype=dtype, device=device) for size, dtype in zip(sizes, kinds)]
