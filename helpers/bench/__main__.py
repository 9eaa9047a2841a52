"""``python -m helpers.bench``: the benchmarks (see :mod:`helpers.bench`)."""

import sys

from helpers.bench.cli import main

sys.exit(main())
