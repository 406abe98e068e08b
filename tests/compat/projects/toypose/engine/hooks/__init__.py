from .sync_norm_hook import SyncNormHook

__all__ = ['SyncNormHook']
