// SPDX-License-Identifier: Apache-2.0
#ifndef OKPU_PLAN_STEPS_NEUTRAL_H
#define OKPU_PLAN_STEPS_NEUTRAL_H
#endif
