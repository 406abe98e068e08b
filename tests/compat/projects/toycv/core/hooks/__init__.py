from .generic_hook import ModeCounterHook
from .logger_hook import ListLoggerHook
from .optimizer_hook import ManualOptimizerHook
from .seed_hook import LossPrinterHook

__all__ = ['ModeCounterHook', 'ListLoggerHook', 'ManualOptimizerHook', 'LossPrinterHook']
