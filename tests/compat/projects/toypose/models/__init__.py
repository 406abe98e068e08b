from .ema import ExpMomentumEMA

__all__ = ['ExpMomentumEMA']
