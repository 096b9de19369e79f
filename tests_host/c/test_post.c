// SPDX-License-Identifier: Apache-2.0
/* Post-processing (c_src/post): YOLOv2 region decode and face encode/compare, including MaixPy's fixed bugs.
 * Exits non-zero on the first failure. Built and run under ASan + UBSan by `make ctest`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "post/face.h"
#include "post/yolo2.h"

static int failures;

#define CHECK(cond)                                                                                                 \
    do {                                                                                                            \
        if (!(cond)) {                                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                \
            failures++;                                                                                             \
        }                                                                                                           \
    } while (0)

/* A counting allocator: checks that decode frees exactly what it took. */
static long live_allocs;
static size_t live_bytes;

static void *count_alloc(void *ctx, size_t size)
{
    (void)ctx;
    live_allocs++;
    live_bytes += size;
    return calloc(1, size);
}

static void count_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    live_allocs--;
    live_bytes -= size;
    free(ptr);
}

static const okpu_allocator counting = {count_alloc, count_free, NULL};

/* Output buffer of w*h*ch floats, every logit very negative (no objects, tiny boxes). */
static float *blank(uint32_t w, uint32_t h, uint32_t ch)
{
    size_t i, n = (size_t)w * h * ch;
    float *d = malloc(n * sizeof *d);
    for (i = 0; i < n; i++)
        d[i] = -20.0f;
    return d;
}

static float *at(float *d, uint32_t w, uint32_t h, uint32_t classes, int anchor, int plane, uint32_t col, uint32_t row)
{
    size_t wh = (size_t)w * h;
    return d + ((size_t)anchor * (5 + classes) + (size_t)plane) * wh + (size_t)row * w + col;
}

static void test_single_box(void)
{
    /* 4x3 grid, 1 anchor of 2x2 cells, 1 class, input 40x30: cell (col 1, row 1) with sx = sy = 0.5 (logit 0),
     * tw = th = 0: centre (15, 15), size 20x20 -> rect (5, 5, 20, 20). */
    const float anchors[2] = {2.0f, 2.0f};
    okpu_yolo2_params p = {0.5, 0.3, 1, anchors};
    uint32_t w = 4, h = 3, ch = 6;
    float *d = blank(w, h, ch);
    okpu_yolo2_box out[4];
    size_t count = 99;
    okpu_error err;
    *at(d, w, h, 1, 0, 0, 1, 1) = 0;
    *at(d, w, h, 1, 0, 1, 1, 1) = 0;
    *at(d, w, h, 1, 0, 2, 1, 1) = 0;
    *at(d, w, h, 1, 0, 3, 1, 1) = 0;
    *at(d, w, h, 1, 0, 4, 1, 1) = 5; /* obj = 0.9933 */
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 40, 30, &counting, out, 4, &count, &err) == OKPU_OK);
    CHECK(count == 1);
    CHECK(out[0].x == 5 && out[0].y == 5 && out[0].w == 20 && out[0].h == 20);
    CHECK(out[0].classid == 0);
    CHECK(fabsf(out[0].value - (float)(1.0 / (1.0 + exp(-5.0)))) < 1e-6f);
    CHECK(live_allocs == 0 && live_bytes == 0);
    free(d);
}

static void test_classes_from_anchor_num(void)
{
    /* 3 anchors x (5 + 20 classes) = 75 channels: MaixPy would have computed 75/5 - 5 = 10 classes. */
    float anchors[6] = {1, 1, 1, 1, 1, 1};
    okpu_yolo2_params p = {0.5, 0.3, 3, anchors};
    uint32_t w = 5, h = 4, ch = 75;
    float *d = blank(w, h, ch);
    okpu_yolo2_box out[8];
    size_t count;
    okpu_error err;
    /* anchor 2, cell (3, 2): class 17 dominant */
    *at(d, w, h, 20, 2, 4, 3, 2) = 6;
    *at(d, w, h, 20, 2, 5 + 17, 3, 2) = 8;
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 50, 40, NULL, out, 8, &count, &err) == OKPU_OK);
    CHECK(count == 1);
    CHECK(out[0].classid == 17);
    /* not a multiple of anchor_num, and too few channels for one class */
    CHECK(okpu_yolo2_decode(d, w, h, 76, &p, 50, 40, NULL, out, 8, &count, &err) == OKPU_ERR_PARAM);
    CHECK(err.code == OKPU_ERR_PARAM && strstr(err.message, "76") != NULL);
    CHECK(okpu_yolo2_decode(d, w, h, 15, &p, 50, 40, NULL, out, 8, &count, &err) == OKPU_ERR_PARAM);
    p.threshold = 1.5;
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 50, 40, NULL, out, 8, &count, &err) == OKPU_ERR_PARAM);
    p.threshold = 0.5;
    p.anchor_num = 0;
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 50, 40, NULL, out, 8, &count, &err) == OKPU_ERR_PARAM);
    free(d);
}

static void test_nms_and_readonly(void)
{
    /* two neighbouring cells predict the same large box (anchor 4x4 cells): NMS keeps the stronger one. */
    const float anchors[2] = {4.0f, 4.0f};
    okpu_yolo2_params p = {0.5, 0.3, 1, anchors};
    uint32_t w = 8, h = 8, ch = 6, i;
    size_t n = (size_t)w * h * ch, count;
    float *d = blank(w, h, ch), *copy = malloc(n * sizeof(float));
    okpu_yolo2_box out[4];
    okpu_error err;
    for (i = 3; i <= 4; i++) {
        *at(d, w, h, 1, 0, 2, i, 3) = 0; /* box 4x4 cells */
        *at(d, w, h, 1, 0, 3, i, 3) = 0;
    }
    *at(d, w, h, 1, 0, 4, 3, 3) = 3;
    *at(d, w, h, 1, 0, 4, 4, 3) = 4;
    memcpy(copy, d, n * sizeof(float));
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 64, 64, NULL, out, 4, &count, &err) == OKPU_OK);
    CHECK(count == 1);
    CHECK(fabsf(out[0].value - (float)(1.0 / (1.0 + exp(-4.0)))) < 1e-6f);
    CHECK(memcmp(copy, d, n * sizeof(float)) == 0); /* MaixPy sigmoided the output in place */
    /* with nms 1.0 nothing is suppressed */
    p.nms = 1.0;
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 64, 64, NULL, out, 4, &count, &err) == OKPU_OK);
    CHECK(count == 2);
    free(d);
    free(copy);
}

static void test_many_boxes_two_pass(void)
{
    /* 20x15 grid, every cell an object with a small box: 300 detections (MaixPy: 10-slot array, overflow). */
    const float anchors[2] = {0.5f, 0.5f};
    okpu_yolo2_params p = {0.5, 0.3, 1, anchors};
    uint32_t w = 20, h = 15, ch = 6, i;
    float *d = blank(w, h, ch);
    okpu_yolo2_box *out;
    size_t count = 0, count2 = 0, cap = okpu_yolo2_max_boxes(w, h, 1);
    okpu_error err;
    for (i = 0; i < w * h; i++) {
        d[i] = 0;
        d[w * h + i] = 0;
        d[2 * w * h + i] = 0;
        d[3 * w * h + i] = 0;
        d[4 * w * h + i] = 2;
    }
    CHECK(cap == 300);
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 320, 240, NULL, NULL, 0, &count, &err) == OKPU_OK);
    CHECK(count == 300);
    out = malloc(count * sizeof *out);
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 320, 240, NULL, out, count, &count2, &err) == OKPU_OK);
    CHECK(count2 == 300);
    /* box order: cells row-major; cell (col 3, row 2) = index 43: centre (3.5*16, 2.5*16) = (56, 40), 8x8 */
    CHECK(out[43].x == 52 && out[43].y == 36 && out[43].w == 8 && out[43].h == 8);
    free(out);
    free(d);
}

static void test_clamp_and_nonfinite(void)
{
    /* A huge box at the top-left corner is clamped to the image; NaN / inf outputs neither crash nor invent boxes. */
    const float anchors[2] = {10.0f, 10.0f};
    okpu_yolo2_params p = {0.5, 0.3, 1, anchors};
    uint32_t w = 4, h = 4, ch = 6, i;
    float *d = blank(w, h, ch);
    okpu_yolo2_box out[16];
    size_t count;
    okpu_error err;
    *at(d, w, h, 1, 0, 4, 0, 0) = 5;
    *at(d, w, h, 1, 0, 2, 0, 0) = 1;
    *at(d, w, h, 1, 0, 3, 0, 0) = 1;
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 32, 32, NULL, out, 16, &count, &err) == OKPU_OK);
    CHECK(count == 1);
    CHECK(out[0].x == 0 && out[0].y == 0 && out[0].x + out[0].w <= 32 && out[0].y + out[0].h <= 32);
    CHECK(out[0].w > 0 && out[0].h > 0);
    for (i = 0; i < w * h * ch; i++)
        d[i] = (i % 3 == 0) ? NAN : (i % 3 == 1 ? INFINITY : -INFINITY);
    CHECK(okpu_yolo2_decode(d, w, h, ch, &p, 32, 32, NULL, out, 16, &count, &err) == OKPU_OK);
    for (i = 0; i < count && i < 16; i++)
        CHECK(out[i].x >= 0 && out[i].y >= 0 && out[i].x + out[i].w <= 32 && out[i].y + out[i].h <= 32);
    free(d);
}

static void test_face(void)
{
    const float v[8] = {0.25f, -0.25f, 0.3f, -0.3f, 0.1f, -0.1f, 0.0019f, NAN};
    const int8_t want[8] = {127, -128, 127, -128, 51, -51, 0, 0};
    int8_t q[8], neg[8], zero[8] = {0};
    okpu_error err;
    int i;
    CHECK(okpu_face_encode(v, 8, q, &err) == OKPU_OK);
    for (i = 0; i < 8; i++)
        CHECK(q[i] == want[i]);
    CHECK(fabs(okpu_face_compare(q, q, 8) - 100.0) < 1e-9);
    for (i = 0; i < 8; i++)
        neg[i] = (int8_t)(q[i] == -128 ? 127 : -q[i]);
    CHECK(okpu_face_compare(q, neg, 8) < 1.0);
    /* zero vector: defined, not NaN */
    CHECK(okpu_face_compare(q, zero, 8) == OKPU_FACE_SCORE_UNDEFINED);
    CHECK(okpu_face_compare(zero, zero, 8) == OKPU_FACE_SCORE_UNDEFINED);
    CHECK(okpu_face_compare(q, q, 0) == OKPU_FACE_SCORE_UNDEFINED);
    {
        /* orthogonal vectors: 50 */
        const int8_t a[2] = {100, 0}, b[2] = {0, -7};
        CHECK(fabs(okpu_face_compare(a, b, 2) - 50.0) < 1e-9);
    }
}

int main(void)
{
    test_single_box();
    test_classes_from_anchor_num();
    test_nms_and_readonly();
    test_many_boxes_two_pass();
    test_clamp_and_nonfinite();
    test_face();
    if (failures) {
        fprintf(stderr, "test_post: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_post: all checks passed\n");
    return 0;
}
