"""``mmengine.fileio``: not ported; importing it raises one ``ImportError`` saying why and what
to use instead (:data:`hookline.compat.unsupported.MODULES`)."""

from hookline.compat.unsupported import refuse_module

refuse_module("mmengine.fileio")
