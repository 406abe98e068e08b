"""An mmdet 3.x-style project: its own registries (children of MMEngine's), hooks and a model."""
