// SPDX-License-Identifier: Apache-2.0
/* RV64 semihosting build: the host port configuration with OPENKPU_SEMIHOST (set by the Makefile). */
#include "../host/mpconfigport.h"
