"""``python -m helpers.protobuf_demo``: see :mod:`helpers.protobuf_demo.cli`."""

import sys

from helpers.protobuf_demo.cli import main

sys.exit(main())
