// SPDX-License-Identifier: Apache-2.0
/* The step table, generated from the steps_*.def lists. */
#include "plan.h"

const okpu_step_desc okpu_step_table[OKPU_STEP_COUNT] = {
#define OKPU_STEP(id, name, type, fn) {name, sizeof(type), fn},
#include "steps_kpu.def"
#include "steps_cpu.def"
#include "steps_neutral.def"
#include "steps_v5.def"
#undef OKPU_STEP
};

const char *okpu_step_name(okpu_step_kind kind)
{
    return (unsigned)kind < (unsigned)OKPU_STEP_COUNT ? okpu_step_table[kind].name : "?";
}
