"""An mmpretrain-style project: an EMAHook subclass (a name hookline's built-ins hold) and a
precise-BN hook."""
