# SPDX-License-Identifier: Apache-2.0
"""MicroPython's `uio` on a PC: CPython's io (StringIO, BytesIO, open)."""
from io import BytesIO, StringIO, open  # noqa: F401
