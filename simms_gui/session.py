"""The session (moved to :mod:`simms_gui.model.session`; kept for existing imports)."""

from simms_gui.model.session import *  # noqa: F403
from simms_gui.model.session import __all__  # noqa: F401
