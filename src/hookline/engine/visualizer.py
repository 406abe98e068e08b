"""``Visualizer``: scalars, images and the config of a run, written by backends.

``runner.visualizer`` is one (MMEngine's ``Visualizer``): ``add_scalars``,
``add_scalar``, ``add_image`` and ``add_config`` go to every backend;
:class:`LocalVisBackend` (the default) writes JSON lines, PNG files and the
config under ``work_dir/<timestamp>/vis_data``, :class:`TensorboardVisBackend`
writes TensorBoard events. Only the main process writes; nothing is written
(no folder made) until something is added.

Example::

    >>> import json, tempfile, pathlib, torch
    >>> from hookline.engine.visualizer import Visualizer
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> vis = Visualizer(save_dir=folder)
    >>> vis.add_scalars({"loss": 0.5, "acc": torch.tensor(0.75)}, step=3)
    >>> vis.add_image("zeros", torch.zeros(4, 6, 3, dtype=torch.uint8), step=3)
    >>> json.loads((folder / "scalars.json").read_text()), sorted(p.name for p in folder.rglob("*.png"))
    ({'loss': 0.5, 'acc': 0.75, 'step': 3}, ['zeros_3.png'])
"""

from __future__ import annotations

import json
import struct
import weakref
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from hookline.core import ConfigError

from . import distributed
from .history_buffer import to_float


def image_tensor(image: Any) -> torch.Tensor:
    """An image (numpy array or tensor; HxW, HxWxC or CxHxW; uint8 or float in [0, 1]) as a
    uint8 HxWxC tensor with C in 1, 3, 4."""
    tensor = torch.as_tensor(image).detach().cpu()
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(-1)
    if tensor.dim() != 3:
        raise ConfigError(f"an image must be HxW, HxWxC or CxHxW, got shape {tuple(tensor.shape)}")
    if tensor.shape[-1] not in (1, 3, 4) and tensor.shape[0] in (1, 3, 4):
        tensor = tensor.permute(1, 2, 0)
    if tensor.shape[-1] not in (1, 3, 4):
        raise ConfigError(f"an image needs 1, 3 or 4 channels, got shape {tuple(tensor.shape)}")
    if tensor.is_floating_point():
        tensor = (tensor.clamp(0, 1) * 255).round()
    return tensor.to(torch.uint8).contiguous()


def png_bytes(image: Any) -> bytes:
    """``image`` (see :func:`image_tensor`) encoded as a PNG file."""
    pixels = image_tensor(image)
    height, width, channels = pixels.shape
    color = {1: 0, 3: 2, 4: 6}[channels]
    rows = pixels.reshape(height, width * channels).numpy().tobytes()
    stride = width * channels
    raw = b"".join(b"\x00" + rows[i * stride:(i + 1) * stride] for i in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def _scalar(value: Any) -> float:
    return to_float(value)


class LocalVisBackend:
    """Files under ``save_dir``: ``scalars.json`` (one JSON object per ``add_scalars``,
    with ``step``), ``vis_image/<name>_<step>.png`` and ``config.py``."""

    def __init__(self, save_dir: str | Path, img_save_dir: str = "vis_image",
                 config_save_file: str = "config.py",
                 scalar_save_file: str = "scalars.json") -> None:
        self.save_dir = Path(save_dir)
        self.img_save_dir = img_save_dir
        self.config_save_file = config_save_file
        self.scalar_save_file = scalar_save_file

    @property
    def experiment(self) -> LocalVisBackend:
        return self

    def _folder(self, *parts: str) -> Path:
        folder = self.save_dir.joinpath(*parts)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def add_config(self, config: Any, **kwargs: Any) -> None:
        text = getattr(config, "pretty_text", None)
        if not isinstance(text, str):
            text = json.dumps(config, indent=2, default=repr, sort_keys=False)
        (self._folder() / self.config_save_file).write_text(text + "\n", encoding="utf-8")

    def add_image(self, name: str, image: Any, step: int = 0, **kwargs: Any) -> None:
        safe = name.replace("/", "_")
        (self._folder(self.img_save_dir) / f"{safe}_{step}.png").write_bytes(png_bytes(image))

    def add_scalar(self, name: str, value: Any, step: int = 0, **kwargs: Any) -> None:
        self.add_scalars({name: value}, step)

    def add_scalars(self, scalar_dict: Mapping[str, Any], step: int = 0,
                    file_path: str | None = None, **kwargs: Any) -> None:
        record = {name: _scalar(value) for name, value in scalar_dict.items()}
        record["step"] = step
        line = json.dumps(record) + "\n"
        folder = self._folder()
        with open(folder / self.scalar_save_file, "a", encoding="utf-8") as out:
            out.write(line)
        if file_path is not None:
            with open(folder / Path(file_path).name, "a", encoding="utf-8") as out:
                out.write(line)

    def close(self) -> None:
        """Nothing is held open."""


class TensorboardVisBackend:
    """TensorBoard event files under ``save_dir`` (the writer is made on first use)."""

    def __init__(self, save_dir: str | Path) -> None:
        self.save_dir = Path(save_dir)
        self._writer: Any = None

    @property
    def experiment(self) -> Any:
        """The ``torch.utils.tensorboard.SummaryWriter``."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415  (lazy: tensorboard only when used)

            self._writer = SummaryWriter(str(self.save_dir))
        return self._writer

    def add_config(self, config: Any, **kwargs: Any) -> None:
        text = getattr(config, "pretty_text", None)
        self.experiment.add_text("config", text if isinstance(text, str) else
                                 json.dumps(config, default=repr))

    def add_image(self, name: str, image: Any, step: int = 0, **kwargs: Any) -> None:
        self.experiment.add_image(name, image_tensor(image).numpy(), step, dataformats="HWC")

    def add_scalar(self, name: str, value: Any, step: int = 0, **kwargs: Any) -> None:
        self.experiment.add_scalar(name, _scalar(value), step)

    def add_scalars(self, scalar_dict: Mapping[str, Any], step: int = 0,
                    file_path: str | None = None,  # noqa: ARG002  (a local-file option)
                    **kwargs: Any) -> None:
        for name, value in scalar_dict.items():
            self.add_scalar(name, value, step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


#: backend ``type`` names a ``vis_backends`` config may use
VIS_BACKENDS: dict[str, type] = {"LocalVisBackend": LocalVisBackend,
                                  "TensorboardVisBackend": TensorboardVisBackend}


class Visualizer:
    """Sends scalars, images and configs to its backends (main process only).

    Args:
        name: the instance's name (``get_instance`` looks it up).
        save_dir: where backends without their own ``save_dir`` write.
        vis_backends: backend objects or ``{"type": "LocalVisBackend" |
            "TensorboardVisBackend", "save_dir": ...}`` configs; default: one
            :class:`LocalVisBackend` when ``save_dir`` is given, else none.
    """

    _instances: ClassVar[weakref.WeakValueDictionary[str, Visualizer]] = \
        weakref.WeakValueDictionary()
    _current: ClassVar[weakref.ReferenceType[Visualizer] | None] = None

    def __init__(self, name: str = "visualizer", save_dir: str | Path | None = None,
                 vis_backends: Sequence[Any] | None = None, **kwargs: Any) -> None:
        self.name = name
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.dataset_meta: dict[str, Any] = {}
        self._vis_backends: dict[str, Any] = {}
        if vis_backends is None:
            vis_backends = [{"type": "LocalVisBackend"}] if save_dir is not None else []
        for spec in vis_backends:
            backend = self._build(spec)
            label = type(backend).__name__
            if label in self._vis_backends:
                label = f"{label}.{len(self._vis_backends)}"
            self._vis_backends[label] = backend
        Visualizer._instances[name] = self
        self.make_current()

    def make_current(self) -> None:
        """Make this the instance :meth:`get_current_instance` returns."""
        Visualizer._current = weakref.ref(self)

    def _build(self, spec: Any) -> Any:
        if not isinstance(spec, Mapping):
            return spec
        options = dict(spec)
        kind = options.pop("type", None)
        if kind not in VIS_BACKENDS:
            raise ConfigError.unknown("vis backend", kind, VIS_BACKENDS)
        if "save_dir" not in options:
            if self.save_dir is None:
                raise ConfigError(f"{kind} needs a save_dir (or give the Visualizer one)")
            options["save_dir"] = self.save_dir
        return VIS_BACKENDS[kind](**options)

    # -- instances (MMEngine's ManagerMixin) --------------------------------------------------
    @classmethod
    def get_current_instance(cls) -> Visualizer:
        """The Visualizer made last (a Runner makes one); a backend-less one if none."""
        current = cls._current() if cls._current is not None else None
        return current if current is not None else cls()

    @classmethod
    def get_instance(cls, name: str, **kwargs: Any) -> Visualizer:
        """The instance called ``name``, made with ``kwargs`` if there is none."""
        existing = cls._instances.get(name)
        return existing if existing is not None else cls(name=name, **kwargs)

    # -- what goes to the backends ------------------------------------------------------------
    @property
    def backends(self) -> dict[str, Any]:
        return dict(self._vis_backends)

    def get_backend(self, name: str) -> Any:
        """The backend called ``name`` (its class name), or None."""
        return self._vis_backends.get(name)

    def _each(self) -> list[Any]:
        return list(self._vis_backends.values()) if distributed.is_main_process() else []

    def set_dataset_meta(self, dataset_meta: Mapping[str, Any]) -> None:
        self.dataset_meta = dict(dataset_meta)

    def add_config(self, config: Any, **kwargs: Any) -> None:
        for backend in self._each():
            backend.add_config(config, **kwargs)

    def add_image(self, name: str, image: Any, step: int = 0) -> None:
        for backend in self._each():
            backend.add_image(name, image, step)

    def add_datasample(self, name: str, image: Any, data_sample: Any = None,  # noqa: ARG002
                       draw_gt: bool = True, draw_pred: bool = True,  # noqa: ARG002
                       show: bool = False, wait_time: float = 0,  # noqa: ARG002
                       step: int = 0, **kwargs: Any) -> None:
        """Save ``image`` as it is (drawing annotations is left to task visualizers)."""
        self.add_image(name, image, step)

    def add_scalar(self, name: str, value: Any, step: int = 0, **kwargs: Any) -> None:
        for backend in self._each():
            backend.add_scalar(name, value, step, **kwargs)

    def add_scalars(self, scalar_dict: Mapping[str, Any], step: int = 0,
                    file_path: str | None = None, **kwargs: Any) -> None:
        for backend in self._each():
            backend.add_scalars(scalar_dict, step, file_path, **kwargs)

    def close(self) -> None:
        for backend in self._vis_backends.values():
            backend.close()

    def __repr__(self) -> str:
        return f"Visualizer({self.name!r}, backends={list(self._vis_backends)})"
