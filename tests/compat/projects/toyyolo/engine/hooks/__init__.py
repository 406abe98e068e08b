from .yolov5_param_scheduler_hook import YOLOv5ParamSchedulerHook
from .yolox_mode_switch_hook import YOLOXModeSwitchHook

__all__ = ['YOLOv5ParamSchedulerHook', 'YOLOXModeSwitchHook']
