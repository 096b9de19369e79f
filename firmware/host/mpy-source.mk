# SPDX-License-Identifier: Apache-2.0
# Where MicroPython's core source comes from (shared by firmware/host and firmware/rv64).
# Default: the PyPI sdist of mpy-cross-v6-3 1.1.1 (MicroPython v1.23.0 py/ + shared/ + tools/), fetched by
# scripts/mpy_fetch.sh into build/mpy-src and checked against this sha256. Or MICROPY_DIR=/path/to/micropython.
OPENKPU_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
MPY_SDIST_SHA256 := 55414c358f5844c784e76d3b253cbd7af5f243ddd4c0b47a26d3875d628df300
MPY_SRC_DIR := $(OPENKPU_ROOT)/build/mpy-src

ifeq ($(MICROPY_DIR),)
MICROPY_DIR := $(MPY_SRC_DIR)/mpy_cross_v6_3-1.1.1/micropython
ifeq ($(wildcard $(MICROPY_DIR)/py/py.mk),)
$(info fetching MicroPython core source (pip download mpy-cross-v6-3==1.1.1, sha256 $(MPY_SDIST_SHA256)))
MPY_FETCH_STATUS := $(shell $(OPENKPU_ROOT)/scripts/mpy_fetch.sh $(MPY_SRC_DIR) $(MPY_SDIST_SHA256) >&2; echo $$?)
ifneq ($(MPY_FETCH_STATUS),0)
$(error could not fetch MicroPython's source (see above); or set MICROPY_DIR=/path/to/micropython)
endif
endif
else
ifeq ($(wildcard $(MICROPY_DIR)/py/py.mk),)
$(error MICROPY_DIR=$(MICROPY_DIR) has no py/py.mk)
endif
endif
