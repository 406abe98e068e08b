"""``python -m hookline``: the same as the ``hookline`` command (see :mod:`hookline.cli`)."""

from hookline.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
