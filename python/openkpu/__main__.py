# SPDX-License-Identifier: Apache-2.0
"""`python -m openkpu run script.py ...`: see openkpu.runner."""
import sys

from openkpu.runner import main

if __name__ == "__main__":
    sys.exit(main())
