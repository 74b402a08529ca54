"""PyInstaller entry script of the frozen ``simms-gui`` executable."""

import sys

from simms_gui.app import main

if __name__ == "__main__":
    sys.exit(main())
