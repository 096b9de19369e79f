// SPDX-License-Identifier: Apache-2.0
#ifndef OKPU_PLAN_STEPS_CPU_H
#define OKPU_PLAN_STEPS_CPU_H
#endif
