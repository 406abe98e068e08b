"""MMEngine's own kind of hook file (``mmengine/hooks/*.py``), ported: it registers into the
MMEngine root registry itself, under a name hookline's built-ins already use."""
