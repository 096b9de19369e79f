# SPDX-License-Identifier: Apache-2.0
# openkpu `_kpu` user C module for MicroPython's make-based ports:
#   make USER_C_MODULES=/path/to/openkpu/modules ...
# Builds the binding and the portable C core (c_src/*/*.c) into the firmware.
KPU_MOD_DIR := $(USERMOD_DIR)
OKPU_CORE_DIR := $(abspath $(USERMOD_DIR)/../../c_src)

SRC_USERMOD_C += $(KPU_MOD_DIR)/modkpu.c
SRC_USERMOD_LIB_C += $(sort $(wildcard $(OKPU_CORE_DIR)/*/*.c))
CFLAGS_USERMOD += -I$(OKPU_CORE_DIR)
