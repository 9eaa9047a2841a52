"""``python -m helpers.convert``: this process never needs the TensorFlow runtime."""

import sys

from helpers.convert import cli, encode

encode.LIGHT = True  # load TensorFlow's protobuf modules only (see helpers.records.load_features)
sys.exit(cli.main())
