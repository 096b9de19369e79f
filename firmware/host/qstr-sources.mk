# SPDX-License-Identifier: Apache-2.0
# Included by every port's Makefile (host, rv64, k210) once SRC_QSTR and BUILD are set. MicroPython rescans for qstrs
# only the sources newer than its last scan: a source added to SRC_QSTR after a build (an older file) would never be
# scanned, and its MP_QSTR_ names would be undeclared. A changed list starts the generated headers and the frozen
# modules (whose qstr pool depends on the table) over.
$(shell mkdir -p $(BUILD); echo "$(SRC_QSTR)" | cmp -s - $(BUILD)/qstr-sources.txt || \
	{ rm -rf $(BUILD)/genhdr $(BUILD)/frozen_mpy $(BUILD)/frozen_content.*; echo "$(SRC_QSTR)" > $(BUILD)/qstr-sources.txt; })
