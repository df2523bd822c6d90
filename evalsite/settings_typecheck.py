"""Settings for mypy's Django plugin, which loads settings to learn the models: the normal
settings with the development defaults (DEBUG=1 unless set), so type checks need no secret."""

import os

os.environ.setdefault("DEBUG", "1")

from .settings import *  # noqa: E402,F403
