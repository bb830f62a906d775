import sys

from .cli.main import console

sys.exit(console())
