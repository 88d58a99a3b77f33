import sys

from nxc.cli import main

sys.exit(main())
