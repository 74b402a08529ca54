"""``python -m simms_gui``."""

import sys

from simms_gui.app import main

sys.exit(main())
