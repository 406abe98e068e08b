from .ema_hook import EMAHook
from .precise_bn_hook import PreciseBNHook

__all__ = ['EMAHook', 'PreciseBNHook']
