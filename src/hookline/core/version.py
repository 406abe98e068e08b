"""The hookline version, here so that every layer can read it without importing upward.

Example::

    >>> from hookline.core.version import __version__
    >>> __version__.count(".") >= 1
    True
"""

__version__ = "0.1.0"
