"""hookline.app: the assembly layer, the only place that knows engine, hooks, inspect and demo.

It holds config files (load, override, validate, build a Runner), the
built-in registrations and the ``hookline train`` / ``hookline hooks``
commands. Nothing in hookline imports it except the CLI.

Example::

    >>> import tempfile
    >>> from hookline.app import build_runner
    >>> cfg = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
    ...        "optimizer": {"type": "Adam", "lr": 0.003}, "max_epochs": 1,
    ...        "train_dataloader": {"dataset": {"type": "DigitsDataset"}, "batch_size": 32}}
    >>> build_runner(cfg, work_dir=tempfile.mkdtemp()).max_epochs
    1
"""

from .config import apply_overrides, build_runner, load_config, resolve_config, save_config
from .defaults import register_builtins

__all__ = ["apply_overrides", "build_runner", "load_config", "register_builtins",
           "resolve_config", "save_config"]
