"""``mmengine.version``: the MMEngine version these compat modules follow, as MMEngine gives it.

Example::

    >>> from hookline.compat.mmengine.version import __version__, parse_version_info, version_info
    >>> __version__, version_info, parse_version_info("1.2.0rc3")
    ('0.10.7', (0, 10, 7), (1, 2, 0, 'rc3'))
"""

from __future__ import annotations

__version__ = "0.10.7"


def parse_version_info(version_str: str) -> tuple[int | str, ...]:
    """``"0.10.7"`` -> ``(0, 10, 7)``; a release candidate part ``"0rc1"`` -> ``0, "rc1"``
    (MMEngine's function: other parts are left out)."""
    info: list[int | str] = []
    for part in version_str.split("."):
        if part.isdigit():
            info.append(int(part))
        elif "rc" in part:
            number, candidate = part.split("rc", 1)
            info.append(int(number))
            info.append(f"rc{candidate}")
    return tuple(info)


version_info = parse_version_info(__version__)

__all__ = ["__version__", "parse_version_info", "version_info"]
