// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: YOLOv2 region decode and face feature encode/compare on arbitrary model outputs and parameters.
 * Layout of an input: byte 0 selects the API; then a small header of shape and parameters; the rest is the data. */
#include <math.h>
#include <string.h>

#include "fuzz_alloc.h"
#include "post/face.h"
#include "post/yolo2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static float rd_f(const uint8_t *p)
{
    float f;
    memcpy(&f, p, 4);
    return f;
}

static void fuzz_yolo2(const uint8_t *d, size_t size)
{
    static fz_alloc fa;
    okpu_allocator a;
    okpu_yolo2_params p;
    okpu_yolo2_box boxes[64];
    float anchors[32], *vals;
    uint32_t w, h, ch, k;
    size_t count = 0, nvals, cap;
    okpu_error err;
    int i;
    if (size < 16)
        return;
    w = 1u + d[0] % 16u, h = 1u + d[1] % 16u, ch = 1u + d[2];
    p.anchor_num = (int)(d[3] % 17u) - 1; /* -1..15: invalid counts too */
    p.threshold = d[4] / 255.0 * 1.2 - 0.1; /* slightly outside [0, 1] too */
    p.nms = d[5] / 255.0 * 1.2 - 0.1;
    for (i = 0; i < 32; i++)
        anchors[i] = 0.5f + (float)((d[6 + (i % 8)] * (i + 1)) % 97) / 7.0f;
    p.anchors = anchors;
    d += 16, size -= 16;
    nvals = (size_t)w * h * ch;
    vals = (float *)malloc(nvals * sizeof(float));
    for (k = 0; k < nvals; k++)
        vals[k] = (4u * k + 4u <= size) ? rd_f(d + 4u * k) : (float)(int)(k % 13u) - 6.0f;
    fz_init(&fa, &a, d, size);
    cap = (size & 1u) ? 64u : (size % 5u); /* full and short output arrays */
    (void)okpu_yolo2_decode(vals, w, h, ch, &p, 224, 224, &a, boxes, cap, &count, &err);
    fz_check_leaks(&fa);
    for (k = 0; k < (count < cap ? count : cap); k++)
        if (boxes[k].x < 0 || boxes[k].y < 0 || boxes[k].x + boxes[k].w > 224 || boxes[k].y + boxes[k].h > 224)
            fz_die("box outside the image", (size_t)boxes[k].x, (size_t)boxes[k].y);
    free(vals);
}

static void fuzz_face(const uint8_t *d, size_t size)
{
    size_t n = size / 4u, k;
    float *f = (float *)malloc((n ? n : 1u) * sizeof(float));
    int8_t *q = (int8_t *)malloc(n ? n : 1u);
    okpu_error err;
    double s;
    for (k = 0; k < n; k++)
        f[k] = rd_f(d + 4u * k);
    (void)okpu_face_encode(f, n, q, &err);
    s = okpu_face_compare(q, (const int8_t *)d, n < size ? n : size);
    if (!(s >= 0.0 && s <= 100.0))
        fz_die("face_compare outside 0..100", (size_t)s, n);
    free(f);
    free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    if (data[0] & 1u)
        fuzz_face(data + 1, size - 1);
    else
        fuzz_yolo2(data + 1, size - 1);
    return 0;
}
