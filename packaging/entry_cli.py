"""PyInstaller entry script of the frozen ``simms`` command-line executable."""

import sys

from engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
