#!/usr/bin/env python3
"""Flash firmware and kmodels to a K210 board with kflash, after checking the layout: see openkpu/flashing.py.

    python3 scripts/flash_board.py write -p /dev/ttyUSB0 -b 1500000 maixpy.bin digits.kmodel@0x300000
    python3 scripts/flash_board.py write --dry-run maixpy.bin digits.kmodel@0x300000
    python3 scripts/flash_board.py pack -o board.kfpkg maixpy.bin digits.kmodel@0x300000
"""
import os
import sys

try:
    from openkpu.flashing import main
except ImportError:  # a checkout without `pip install .`: the package sources (model checks still need _kpu)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    from openkpu.flashing import main

if __name__ == "__main__":
    sys.exit(main(prog="flash_board.py"))
