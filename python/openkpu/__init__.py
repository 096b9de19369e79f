# SPDX-License-Identifier: Apache-2.0
"""openkpu: an open reimplementation of MaixPy's `KPU` module for the Kendryte K210, on a PC.

What `pip install .` provides:

- `KPU` (top-level module, `modules/KPU/KPU.py`): the MaixPy-compatible API, `import KPU as kpu`.
- `_kpu` (C extension): the thin CPython binding of the portable C99 core in `c_src/` (kmodel loader + bit-exact
  KPU emulator). `KPU` is written over it; use `_kpu` directly only for tools.
- `openkpu.flash`: reading models out of SPI-flash images (`.bin` dumps, `.kfpkg` packages) for `KPU.load(offset)`.
- `openkpu.board.image`: a Pillow-backed stand-in for MaixPy's `image` module (see its docstring for how
  `import image` resolves).
"""
__version__ = "0.1.0"
