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
    >>> vis = Visualizer(save_dir=folder)  # writes to folder/vis_data, as MMEngine's
    >>> vis.add_scalars({"loss": 0.5, "acc": torch.tensor(0.75)}, step=3)
    >>> vis.add_image("zeros", torch.zeros(4, 6, 3, dtype=torch.uint8), step=3)
    >>> data = folder / "vis_data"
    >>> json.loads((data / "scalars.json").read_text()), sorted(p.name for p in data.rglob("*.png"))
    ({'loss': 0.5, 'acc': 0.75, 'step': 3}, ['zeros_3.png'])
"""

from __future__ import annotations

import json
import keyword
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


def _scalar(value: Any) -> float | int:
    """A JSON number: ints stay ints (``"iter": 5``, as MMEngine writes them)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return to_float(value)


def _literal(value: Any) -> str:
    """``value`` as Python source: ``dict(a=1)`` for dicts with identifier keys (MMEngine's
    config style), ``{'a b': 1}`` otherwise, lists, tuples and scalars as ``repr``."""
    if isinstance(value, Mapping):
        keys = list(value)
        if all(isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k)
               for k in keys):
            return "dict(" + ", ".join(f"{k}={_literal(value[k])}" for k in keys) + ")"
        return "{" + ", ".join(f"{_literal(k)}: {_literal(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, Path):
        return repr(str(value))
    return repr(value)


def config_text(config: Mapping[str, Any]) -> str:
    """``config`` as a Python config file (MMEngine's ``Config.pretty_text`` style), one
    ``key = value`` line per top-level key.

    Example::

        >>> print(config_text({"a": 1, "b": {"c": 2}, "c": ["x", (1,)]}))
        a = 1
        b = dict(c=2)
        c = ['x', (1,)]
    """
    return "\n".join(f"{key} = {_literal(value)}" for key, value in config.items())


def _config_as_text(config: Any) -> str:
    """A dict config as :func:`config_text`; anything else as its ``pretty_text`` or ``str``."""
    if isinstance(config, Mapping) and all(isinstance(k, str) for k in config):
        return config_text(config)
    text = getattr(config, "pretty_text", None)
    return text if isinstance(text, str) else str(config)


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
        """Write ``config`` as Python config text (:func:`config_text`)."""
        text = _config_as_text(config)
        (self._folder() / self.config_save_file).write_text(text + "\n", encoding="utf-8")

    def add_image(self, name: str, image: Any, step: int = 0, **kwargs: Any) -> None:
        safe = name.replace("/", "_")
        (self._folder(self.img_save_dir) / f"{safe}_{step}.png").write_bytes(png_bytes(image))

    def add_scalar(self, name: str, value: Any, step: int = 0, **kwargs: Any) -> None:
        self.add_scalars({name: value}, step)

    def add_scalars(self, scalar_dict: Mapping[str, Any], step: int = 0,
                    file_path: str | None = None, **kwargs: Any) -> None:
        record = {name: _scalar(value) for name, value in scalar_dict.items()}
        record.setdefault("step", step)  # a "step" of the dict's own wins, as in MMEngine
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
        self.experiment.add_text("config", _config_as_text(config))

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


def _backend_specs(vis_backends: Any, has_save_dir: bool) -> list[Any]:
    """``vis_backends`` as a list: one dict or backend object is wrapped (as MMEngine does);
    None is one :class:`LocalVisBackend` when there is a ``save_dir``, else none."""
    if vis_backends is None:
        return [{"type": "LocalVisBackend"}] if has_save_dir else []
    if isinstance(vis_backends, Mapping) or hasattr(vis_backends, "add_scalars"):
        return [vis_backends]
    if isinstance(vis_backends, (str, bytes)) or not isinstance(vis_backends, Sequence):
        raise ConfigError(f"Visualizer vis_backends must be a backend config dict "
                          f"(e.g. {{'type': 'LocalVisBackend'}}), a backend object or a list "
                          f"of them, got {vis_backends!r}")
    return list(vis_backends)


class Visualizer:
    """Sends scalars, images and configs to its backends (main process only).

    Args:
        name: the instance's name (``get_instance`` looks it up).
        save_dir: backends without their own ``save_dir`` write to ``save_dir/vis_data``
            (as MMEngine's).
        vis_backends: a backend object or ``{"type": "LocalVisBackend" |
            "TensorboardVisBackend", "save_dir": ...}`` config, or a list of them;
            default: one :class:`LocalVisBackend` when ``save_dir`` is given, else none.
    """

    _instances: ClassVar[weakref.WeakValueDictionary[str, Visualizer]] = \
        weakref.WeakValueDictionary()
    _current: ClassVar[weakref.ReferenceType[Visualizer] | None] = None

    def __init__(self, name: str = "visualizer", save_dir: str | Path | None = None,
                 vis_backends: Any = None, **kwargs: Any) -> None:
        self.name = name
        #: where backends without a ``save_dir`` of their own write: ``save_dir/vis_data``
        self.save_dir = Path(save_dir) / "vis_data" if save_dir is not None else None
        self.dataset_meta: dict[str, Any] = {}
        self._vis_backends: dict[str, Any] = {}
        self._pending_config: Any = None  # add_config_with_first_record
        for spec in _backend_specs(vis_backends, save_dir is not None):
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
            if not hasattr(spec, "add_scalars"):
                raise ConfigError(f"each of Visualizer's vis_backends must be a config dict "
                                  f"(e.g. {{'type': 'LocalVisBackend'}}) or a backend object, "
                                  f"got {spec!r}")
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
        backends = list(self._vis_backends.values()) if distributed.is_main_process() else []
        pending = self._pending_config
        if pending is not None and backends:  # the run's config goes with its first record
            self._pending_config = None
            for backend in backends:
                backend.add_config(pending)
        return backends

    def add_config_with_first_record(self, config: Any) -> None:
        """Write ``config`` (MMEngine's ``vis_data/config.py``) just before the first scalar,
        image or config this visualizer writes, so a run that visualizes nothing leaves no
        ``vis_data`` folder behind.

        Example::

            >>> import tempfile
            >>> from pathlib import Path
            >>> folder = Path(tempfile.mkdtemp())
            >>> vis = Visualizer(save_dir=folder)
            >>> vis.add_config_with_first_record({"lr": 0.1})
            >>> (folder / "vis_data").exists()
            False
            >>> vis.add_scalar("loss", 1.0)
            >>> (folder / "vis_data" / "config.py").read_text().strip()
            'lr = 0.1'
        """
        self._pending_config = config

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
