"""``python -m usaav_edu.cli``: the ``usaav-edu`` command."""

import sys

from .command import main

sys.exit(main())
