# SPDX-License-Identifier: Apache-2.0
"""python -m openkpu.vboard boot|run ..."""
import sys

from .cli import main

sys.exit(main(prog="python -m openkpu.vboard"))
