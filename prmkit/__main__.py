import sys

from prmkit.cli import main

sys.exit(main())
