// SPDX-License-Identifier: Apache-2.0
/* Float transcendental functions with the same result on every platform.
 *
 * C libraries' float versions (expf, logf, sinf, cosf) are allowed to be off by an ulp and differ between glibc,
 * newlib and picolibc, so the same model gave different last bits on the PC and on RV64. Computing in double and
 * rounding once to float gives the correctly rounded float result except when the double lies within about 2^-29
 * of a float rounding boundary, so every libm gives identical bits in practice. The chip's newlib expf is a
 * 0.502-ulp routine: it agrees with this wherever it rounds correctly. */
#ifndef OKPU_KERNELS_FMATH_H
#define OKPU_KERNELS_FMATH_H

#include <math.h>

static inline float okpu_expf(float x)
{
    return (float)exp((double)x);
}

static inline float okpu_logf(float x)
{
    return (float)log((double)x);
}

static inline float okpu_sinf(float x)
{
    return (float)sin((double)x);
}

static inline float okpu_cosf(float x)
{
    return (float)cos((double)x);
}

#endif
