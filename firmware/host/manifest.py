# SPDX-License-Identifier: Apache-2.0
# Frozen into the openkpu MicroPython firmware: MaixPy's `KPU` API (modules/KPU/KPU.py, whatever it is at build
# time) and a small pure-Python `image` module.
freeze("$(OPENKPU_ROOT)/firmware/host", "image.py")
freeze("$(OPENKPU_ROOT)/modules/KPU", "KPU.py")
