# SPDX-License-Identifier: Apache-2.0
# Frozen into the K210 firmware: MaixPy's `KPU` API (modules/KPU/KPU.py) and the board's own `image`, `sensor` and
# `lcd` (firmware/k210/modules: Python over the native `_image`, `_camera`, `_lcd`). The host and rv64 ports keep
# firmware/host/manifest.py (the same `image`, no camera or LCD).
freeze("$(OPENKPU_ROOT)/firmware/k210/modules", ("image.py", "sensor.py", "lcd.py"))
freeze("$(OPENKPU_ROOT)/modules/KPU", "KPU.py")
# MaixPy's class API (`from maix import KPU`), the same package `openkpu run` uses (valid MicroPython)
package("maix", base_path="$(OPENKPU_ROOT)/python/openkpu/board")
