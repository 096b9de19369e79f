# SPDX-License-Identifier: Apache-2.0
# Frozen into the host and rv64 MicroPython: MaixPy's `KPU` API (modules/KPU/KPU.py, whatever it is at build time) and
# the board's `image` module (firmware/k210/modules/image.py over the native `_image`, which these ports build too).
freeze("$(OPENKPU_ROOT)/firmware/k210/modules", "image.py")
freeze("$(OPENKPU_ROOT)/modules/KPU", "KPU.py")
