// SPDX-License-Identifier: Apache-2.0
/* Face-feature encoding and comparison: see face.h for the math and what differs from MaixPy. */
#include "face.h"

#include <math.h>

#include "../core/error.h"

int okpu_face_encode(const float *features, size_t n, int8_t *out, okpu_error *err)
{
    size_t i;
    if (n > 0 && (!features || !out))
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "face_encode: missing input or output buffer for %lu values",
                         (unsigned long)n);
    for (i = 0; i < n; i++) {
        double v = features[i];
        double q;
        if (!(v == v))
            v = 0; /* NaN */
        if (v > 0.25)
            v = 0.25;
        if (v < -0.25)
            v = -0.25;
        q = v * 512.0; /* exact: a float times a power of two, in [-128, 128] */
        if (q > 127)
            q = 127; /* MaixPy wrapped 128 to -128 */
        out[i] = (int8_t)(int)q; /* (int) truncates toward zero */
    }
    return OKPU_OK;
}

double okpu_face_compare(const int8_t *a, const int8_t *b, size_t n)
{
    int64_t dot = 0, na = 0, nb = 0;
    size_t i;
    double cosine;
    if (n == 0 || !a || !b)
        return OKPU_FACE_SCORE_UNDEFINED;
    for (i = 0; i < n; i++) {
        dot += (int64_t)a[i] * b[i];
        na += (int64_t)a[i] * a[i];
        nb += (int64_t)b[i] * b[i];
    }
    if (na == 0 || nb == 0)
        return OKPU_FACE_SCORE_UNDEFINED;
    cosine = (double)dot / sqrt((double)na * (double)nb);
    if (cosine > 1)
        cosine = 1; /* rounding */
    if (cosine < -1)
        cosine = -1;
    return 50.0 * (1.0 + cosine);
}
