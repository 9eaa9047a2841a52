"""Run the converter CLI with a pause after each shard, so a test can interrupt it partway.

Usage: python tests/convert/slow_convert.py SECONDS CONVERTER-ARGS... (use --workers 1:
the pause is patched into this process). The seam lives here, not in the product code.
"""

import sys
import time

from helpers.convert import cli, encode, run

encode.LIGHT = True
_write_shard = run.write_shard


def _slow_write_shard(task, output_dir):
    result = _write_shard(task, output_dir)
    time.sleep(float(sys.argv[1]))
    return result


run.write_shard = _slow_write_shard
sys.exit(cli.main(sys.argv[2:]))
