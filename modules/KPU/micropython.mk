# SPDX-License-Identifier: Apache-2.0
# openkpu `_kpu` user C module for MicroPython's make-based ports:
#   make USER_C_MODULES=/path/to/openkpu/modules ...
# Builds the binding and the portable C core (c_src/*/*.c) into the firmware.
KPU_MOD_DIR := $(USERMOD_DIR)
OKPU_CORE_DIR := $(abspath $(USERMOD_DIR)/../../c_src)

SRC_USERMOD_C += $(KPU_MOD_DIR)/modkpu.c
SRC_USERMOD_LIB_C += $(sort $(wildcard $(OKPU_CORE_DIR)/*/*.c))
CFLAGS_USERMOD += -I$(OKPU_CORE_DIR)
# The core's float arithmetic is written for C99's no-contraction default (explicit fmaf where the reference fuses):
# the ports build with -std=gnu99, where GCC would fuse a*b + c on the K210's FPU and the v5 float ops would round
# differently from the reference (found comparing the RV64 build with the host on the kmodel v5 models).
$(BUILD)/$(OKPU_CORE_DIR)/%.o: CFLAGS += -ffp-contract=off
