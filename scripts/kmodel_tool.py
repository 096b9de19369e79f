#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kmodel_tool: inspect a .kmodel, check that models fit a K210, word-swap a model for kpu.load_flash.

    python scripts/kmodel_tool.py inspect model.kmodel [--json]
    python scripts/kmodel_tool.py fit a.kmodel b.kmodel [--firmware full|minimum|minimum-no-camera]
                                  [--firmware-bytes N] [--heap N] [--json]
    python scripts/kmodel_tool.py swap IN OUT | swap --check FILE | swap --unswap IN OUT

A thin wrapper: everything is in python/openkpu/model_tools.py (its docstring has the details). The checkout's
python/ folder comes first on the path, so the script runs the tools of this tree; `_kpu` (the C extension) must be
installed (`make install`).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from openkpu.model_tools import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="kmodel_tool"))
