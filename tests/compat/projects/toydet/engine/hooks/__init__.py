from .checkloss_hook import CheckInvalidLossHook
from .mean_teacher_hook import MeanTeacherHook
from .set_epoch_info_hook import SetEpochInfoHook
from .visualization_hook import DetVisualizationHook

__all__ = ['CheckInvalidLossHook', 'MeanTeacherHook', 'SetEpochInfoHook', 'DetVisualizationHook']
