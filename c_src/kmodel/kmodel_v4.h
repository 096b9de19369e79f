// SPDX-License-Identifier: Apache-2.0
/* kmodel v4 (nncase v0.2.x) reader: okpu_format_v4 (declared in model.h). */
#ifndef OKPU_KMODEL_V4_H
#define OKPU_KMODEL_V4_H

#include <stdint.h>

#include "model.h"

#define KMODEL_V4_HEADER_BYTES 40u

/* Name of a v4 opcode as nncase spells it ("binary", "kpu_conv2d", ...), or NULL when unknown. */
const char *kmodel_v4_opcode_name(uint32_t opcode);

#endif
