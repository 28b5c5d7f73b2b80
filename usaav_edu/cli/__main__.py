"""``python -m usaav_edu.cli``: the ``usaav-edu`` command."""

import sys

from .main import main

sys.exit(main())
