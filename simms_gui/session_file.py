"""Session files (moved to :mod:`simms_gui.model.session_file`; kept for existing imports)."""

from simms_gui.model.session_file import *  # noqa: F403
from simms_gui.model.session_file import __all__  # noqa: F401
