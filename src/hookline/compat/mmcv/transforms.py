"""``mmcv.transforms``: ``Compose``, ``BaseTransform`` and the ``TRANSFORMS`` registry.

A hook that switches a dataset's pipeline (mmdet's ``PipelineSwitchHook``,
mmpretrain's ``SwitchRecipeHook``) needs only ``Compose(transforms)``: a list
of callables, or of configs built from ``TRANSFORMS`` (a child of
``mmengine``'s ``TRANSFORMS``, as in mmcv; register the task's own transforms
there). mmcv's image transforms (``LoadImageFromFile``, ``Resize`` ...) are not
ported: importing one raises an ``ImportError`` saying why.

Example::

    >>> from hookline.compat.mmcv.transforms import TRANSFORMS, BaseTransform, Compose
    >>> @TRANSFORMS.register_module()
    ... class AddOne(BaseTransform):
    ...     def transform(self, results):
    ...         return {**results, "x": results["x"] + 1}
    >>> pipeline = Compose([{"type": "AddOne"}, lambda r: {**r, "x": r["x"] * 10}])
    >>> pipeline({"x": 1}), len(list(pipeline))
    ({'x': 20}, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from hookline.compat.mmengine.registry import TRANSFORMS as MMENGINE_TRANSFORMS
from hookline.compat.mmengine.registry import Registry
from hookline.compat.unsupported import module_getattr

#: mmcv's transform registry (its parent is mmengine's ``TRANSFORMS``)
TRANSFORMS = Registry("transform", parent=MMENGINE_TRANSFORMS, scope="mmcv")


class BaseTransform:
    """mmcv's base class: ``transform(results)`` does the work, calling the object runs it."""

    def __call__(self, results: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...] | None:
        return self.transform(results)

    def transform(self, results: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...] | None:
        """Transform ``results`` (a dict of one sample's data); None drops the sample."""
        raise NotImplementedError(f"{type(self).__name__} must define transform(results)")


@TRANSFORMS.register_module()
class Compose(BaseTransform):
    """Run ``transforms`` in order: callables, or config dicts built from
    :data:`TRANSFORMS`; a transform returning None stops the chain (mmcv's rule)."""

    def __init__(self, transforms: Sequence[Any] | Mapping[str, Any] | Callable[..., Any] | None) -> None:
        if transforms is None:
            transforms = []
        elif isinstance(transforms, Mapping) or callable(transforms):
            transforms = [transforms]
        self.transforms: list[Callable[[Any], Any]] = [_built(t) for t in transforms]

    def __iter__(self) -> Iterator[Callable[[Any], Any]]:
        return iter(self.transforms)

    def transform(self, results: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...] | None:
        for step in self.transforms:
            results = step(results)
            if results is None:
                return None
        return results

    def __repr__(self) -> str:
        inner = "".join(f"\n    {step}" for step in self.transforms)
        return f"{type(self).__name__}({inner}\n)"


def _built(transform: Any) -> Callable[[Any], Any]:
    if isinstance(transform, Mapping):
        return TRANSFORMS.build(transform)  # type: ignore[no-any-return]
    if callable(transform):
        return transform  # type: ignore[no-any-return]
    raise TypeError(f"transform must be callable or a dict, but got {type(transform)}")


#: mmcv's other ``mmcv.transforms`` names: importing one raises an ``ImportError``
_NOT_PORTED = (
    "LoadImageFromFile", "LoadAnnotations", "Normalize", "Pad", "Resize", "RandomResize",
    "RandomChoiceResize", "RandomFlip", "RandomGrayscale", "CenterCrop", "MultiScaleFlipAug",
    "TestTimeAug", "ToTensor", "ImageToTensor", "to_tensor", "KeyMapper", "RandomApply",
    "RandomChoice", "TransformBroadcaster", "cache_random_params", "cache_randomness",
    "avoid_cache_randomness",
)
_WHY = ("data transforms belong to the task's data pipeline (hookline ports mmcv.transforms' "
        "Compose, BaseTransform and TRANSFORMS only)")
__getattr__ = module_getattr(__name__, dict.fromkeys(_NOT_PORTED, _WHY), library="mmcv")

__all__ = ["TRANSFORMS", "BaseTransform", "Compose"]
