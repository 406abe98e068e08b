"""Which framework a callback object belongs to, without importing any framework.

A class counts by its bases' names and modules (``lightning.pytorch...Callback``,
``keras...Callback``), so these checks cost nothing when Keras or Lightning is
not installed (or not imported yet: then no object can be one of theirs).

Example::

    >>> class Plain:
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         pass
    >>> is_keras_callback(Plain()), looks_like_keras(Plain()), is_lightning_callback(Plain())
    (False, True, False)
"""

from __future__ import annotations

from typing import Any

__all__ = ["KERAS_MODULES", "class_named", "is_keras_callback", "is_lightning_callback",
           "is_lightning_module", "looks_like_keras"]

_LIGHTNING = ("lightning.pytorch", "pytorch_lightning")
#: where Keras's callback classes live (Keras 3, the TF-only Keras 2 ``tf_keras``, ``tf.keras``)
KERAS_MODULES = ("keras", "tf_keras", "tensorflow.python.keras", "tensorflow.keras")
#: Keras's callback methods (a Lightning callback, which shares two of these names, is told apart
#: by its class: Lightning runs only subclasses of its Callback)
KERAS_METHODS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
                 "on_batch_begin", "on_batch_end", "on_train_batch_begin", "on_train_batch_end",
                 "on_test_begin", "on_test_end", "on_test_batch_begin", "on_test_batch_end")


def class_named(obj: Any, name: str, modules: tuple[str, ...]) -> bool:
    """Whether a class of ``obj``'s MRO is called ``name`` and lives under one of ``modules``."""
    for cls in type(obj).__mro__:
        module = getattr(cls, "__module__", "") or ""
        if cls.__name__ == name and module.split(".")[0] in {m.split(".")[0] for m in modules} \
                and any(module == m or module.startswith(m + ".") for m in modules):
            return True
    return False


def is_lightning_callback(obj: Any) -> bool:
    """An instance of ``lightning.pytorch.Callback`` (or ``pytorch_lightning.Callback``)."""
    return class_named(obj, "Callback", _LIGHTNING)


def is_lightning_module(obj: Any) -> bool:
    """An instance of ``lightning.pytorch.LightningModule`` (or ``pytorch_lightning``'s)."""
    return class_named(obj, "LightningModule", _LIGHTNING)


def is_keras_callback(obj: Any) -> bool:
    """An instance of ``keras.callbacks.Callback`` (Keras 3, or ``tf.keras``)."""
    return class_named(obj, "Callback", KERAS_MODULES)


def looks_like_keras(obj: Any) -> bool:
    """A Keras callback, or any other object with a Keras method that is neither a Lightning
    callback nor a ``LightningModule`` (whose hook methods share Keras's names)."""
    if is_keras_callback(obj):
        return True
    if is_lightning_callback(obj) or is_lightning_module(obj):
        return False
    return any(callable(getattr(obj, name, None)) for name in KERAS_METHODS)
