#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Flash firmware and kmodels to a K210 board with kflash, after checking the layout: see openkpu/flashing.py.

    python3 scripts/flash_board.py write -p /dev/ttyUSB0 -b 1500000 maixpy.bin digits.kmodel@0x300000
    python3 scripts/flash_board.py write --dry-run maixpy.bin digits.kmodel@0x300000
    python3 scripts/flash_board.py pack -o board.kfpkg maixpy.bin digits.kmodel@0x300000
"""
import os
import sys

# The checkout's python/ folder first, as scripts/kmodel_tool.py does: the script runs the tools of this tree, not
# an older installed copy (the model checks still need the installed _kpu extension: `make install`).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from openkpu.flashing import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="flash_board.py"))
