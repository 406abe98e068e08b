"""mmcv 1.x-era hooks (mmcv's own style, mmdet 2.x, and the seeds' first custom hook), ported
by ``mmcv.runner`` -> ``hookline.compat.mmcv.runner``."""
