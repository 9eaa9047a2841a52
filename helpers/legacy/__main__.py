"""``python -m helpers.legacy``: see :mod:`helpers.legacy.cli`."""

import sys

from helpers.legacy.cli import main

sys.exit(main())
