// SPDX-License-Identifier: Apache-2.0
/* Face-feature encoding and comparison (MaixPy's KPU.face_encode / KPU.face_compare), binding-agnostic.
 *
 * encode: q = trunc(clamp(v, -0.25, 0.25) * 512) as int8, with +0.25 (which gives 128) clamped to 127. MaixPy
 *         stored 128 in an int8, which wrapped to -128 and turned the strongest positive feature into the strongest
 *         negative one. NaN encodes as 0 (MaixPy: undefined behaviour).
 * compare: on two int8 vectors of the same length, dot = sum(a*b), na = sum(a*a), nb = sum(b*b) in 64-bit integers,
 *         score = 50 * (1 + dot / sqrt(na * nb)), i.e. 0..100 (100 = same direction). The face recognition demo
 *         treats > 85 as the same person.
 *         If either vector is all zeros the cosine is undefined (MaixPy returned NaN, and every comparison with NaN
 *         is false, so `score > 85` silently never matched while `max(scores)` picked garbage). Here it is defined
 *         as OKPU_FACE_SCORE_UNDEFINED = 0.0: a zero encoding carries no information, so it must never look like a
 *         match and must rank below every real comparison; 0 is the bottom of the documented range (reached by a
 *         real pair only when exactly opposite), below any threshold a user picks. The same value is returned for
 *         empty vectors.
 */
#ifndef OKPU_POST_FACE_H
#define OKPU_POST_FACE_H

#include "../okpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OKPU_FACE_SCORE_UNDEFINED 0.0

/* Quantise n floats into n int8 values. Never fails for valid pointers (n may be 0). */
int okpu_face_encode(const float *features, size_t n, int8_t *out, okpu_error *err);

/* Similarity of two encodings of length n, in [0, 100]; OKPU_FACE_SCORE_UNDEFINED when either is all zeros. */
double okpu_face_compare(const int8_t *a, const int8_t *b, size_t n);

#ifdef __cplusplus
}
#endif
#endif
