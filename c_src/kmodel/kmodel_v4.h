// SPDX-License-Identifier: Apache-2.0
/* kmodel v4 (nncase v0.2.x) reader: okpu_format_v4 (declared in model.h). */
#ifndef OKPU_KMODEL_V4_H
#define OKPU_KMODEL_V4_H

#include <stdint.h>

#include "model.h"

#define KMODEL_V4_HEADER_BYTES 40u

/* The opcodes, from the one list in kmodel_v4_ops.def: KMODEL_V4_OP_BINARY = 0x00, ..., KMODEL_V4_OP_KPU_CONV2D. */
enum kmodel_v4_opcode {
#define V4_OP(opcode, id, name, fixed_body, decode) KMODEL_V4_OP_##id = opcode,
#include "kmodel_v4_ops.def"
#undef V4_OP
};

/* Name of a v4 opcode as nncase spells it ("binary", "kpu_conv2d", ...), or NULL when unknown. */
const char *okpu_v4_opcode_name(uint32_t opcode);

#endif
