"""The machine line every benchmark prints with its numbers.

Example::

    >>> from _machine import cpu_model
    >>> isinstance(cpu_model(), str)
    True
"""

from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (what ``lscpu`` shows), else platform's guess."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "?"
