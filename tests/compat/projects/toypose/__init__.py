"""An mmpose-style project: an EMA model class for MMEngine's EMAHook, a norm-sync hook."""
