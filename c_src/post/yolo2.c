// SPDX-License-Identifier: Apache-2.0
/* YOLOv2 region-layer decode: see yolo2.h for the math and what differs from MaixPy. */
#include "yolo2.h"

#include <math.h>

#include "../core/alloc.h"
#include "../core/error.h"

/* The scratch: per box (cell, anchor) its centre-format box (4 doubles) and its C class probabilities, plus two
 * index arrays for the per-class sort. */
typedef struct yolo2_work {
    double *boxes;   /* 4 * nbox: x, y, w, h (normalised) */
    double *probs;   /* nbox * classes */
    uint32_t *order; /* nbox */
    uint32_t *tmp;   /* nbox, merge buffer */
} yolo2_work;

size_t okpu_yolo2_max_boxes(uint32_t w, uint32_t h, int anchor_num)
{
    if (w == 0 || h == 0 || anchor_num <= 0)
        return 0;
    if ((uint64_t)w * h * (uint64_t)anchor_num > (uint64_t)UINT32_MAX)
        return 0;
    return (size_t)w * h * (size_t)anchor_num;
}

/* 0 when the shape is invalid or the size does not fit in size_t. */
static size_t scratch_bytes(uint32_t w, uint32_t h, uint32_t ch, int anchor_num, size_t *nbox_out,
                            size_t *classes_out)
{
    size_t nbox = okpu_yolo2_max_boxes(w, h, anchor_num);
    size_t classes, per_box, limit = (size_t)-1;
    if (nbox == 0 || ch % (uint32_t)anchor_num != 0 || ch / (uint32_t)anchor_num < 6)
        return 0;
    classes = ch / (uint32_t)anchor_num - 5;
    /* per box: 4 + classes doubles and 2 uint32 */
    if (classes > (limit / sizeof(double)) - 8)
        return 0;
    per_box = (4 + classes) * sizeof(double) + 2 * sizeof(uint32_t);
    if (nbox > limit / per_box)
        return 0;
    if (nbox_out)
        *nbox_out = nbox;
    if (classes_out)
        *classes_out = classes;
    return nbox * per_box;
}

size_t okpu_yolo2_scratch_bytes(uint32_t w, uint32_t h, uint32_t ch, int anchor_num)
{
    return scratch_bytes(w, h, ch, anchor_num, NULL, NULL);
}

static double sigmoid(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static double overlap(double c1, double s1, double c2, double s2)
{
    double l1 = c1 - s1 / 2, l2 = c2 - s2 / 2;
    double r1 = c1 + s1 / 2, r2 = c2 + s2 / 2;
    double left = l1 > l2 ? l1 : l2;
    double right = r1 < r2 ? r1 : r2;
    return right - left;
}

static double box_iou(const double *a, const double *b)
{
    double iw = overlap(a[0], a[2], b[0], b[2]);
    double ih = overlap(a[1], a[3], b[1], b[3]);
    double inter, uni;
    if (!(iw > 0) || !(ih > 0))
        return 0;
    inter = iw * ih;
    uni = a[2] * a[3] + b[2] * b[3] - inter;
    if (!(uni > 0))
        return 0;
    return inter / uni;
}

/* Stable bottom-up merge sort of box indices by probs[idx * classes + k], descending (equal probs keep box order). */
static void sort_by_prob(uint32_t *order, uint32_t *tmp, size_t n, const double *probs, size_t classes, size_t k)
{
    size_t width, i;
    uint32_t *src = order, *dst = tmp, *swap;
    for (width = 1; width < n; width *= 2) {
        for (i = 0; i < n; i += 2 * width) {
            size_t lo = i, mid = i + width < n ? i + width : n, hi = i + 2 * width < n ? i + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                /* take from the right run only when strictly greater: stability */
                if (probs[(size_t)src[b] * classes + k] > probs[(size_t)src[a] * classes + k])
                    dst[o++] = src[b++];
                else
                    dst[o++] = src[a++];
            }
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        swap = src;
        src = dst;
        dst = swap;
    }
    if (src != order)
        for (i = 0; i < n; i++)
            order[i] = src[i];
}

/* Clamp a pixel coordinate to [0, limit]; NaN goes to 0. */
static double clamp_px(double v, int limit)
{
    if (!(v > 0))
        return 0;
    if (v > (double)limit)
        return (double)limit;
    return v;
}

int okpu_yolo2_decode(const float *data, uint32_t w, uint32_t h, uint32_t ch, const okpu_yolo2_params *params,
                      int img_w, int img_h, const okpu_allocator *alloc, okpu_yolo2_box *out, size_t out_cap,
                      size_t *count, okpu_error *err)
{
    size_t nbox = 0, classes = 0, bytes, wh, found = 0;
    size_t n, i, j, k;
    int anchor_num;
    double thresh, nms;
    void *mem;
    yolo2_work wk;

    if (count)
        *count = 0;
    if (!data || !params || !count || (out_cap > 0 && !out))
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1,
                         "yolo2 decode: missing argument (data, params, count, or out with out_cap > 0)");
    anchor_num = params->anchor_num;
    thresh = params->threshold;
    nms = params->nms;
    if (anchor_num <= 0 || !params->anchors)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1,
                         "yolo2: anchor_num must be > 0 with 2*anchor_num anchor values, got anchor_num %d%s",
                         anchor_num, params->anchors ? "" : " and no anchors");
    if (!(thresh >= 0 && thresh <= 1) || !(nms >= 0 && nms <= 1))
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1,
                         "yolo2: threshold and nms_value must be in [0, 1], got threshold %g, nms_value %g", thresh,
                         nms);
    if (img_w <= 0 || img_h <= 0)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "yolo2: image size must be positive, got %dx%d", img_w, img_h);
    if (w == 0 || h == 0)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "yolo2: output %ux%ux%u has an empty plane", (unsigned)w,
                         (unsigned)h, (unsigned)ch);
    if (ch % (uint32_t)anchor_num != 0 || ch / (uint32_t)anchor_num < 6)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1,
                         "yolo2: output has %u channels, which is not anchor_num * (5 + classes) with anchor_num %d "
                         "and at least one class (expected a multiple of %d, at least %d); check anchor_num and "
                         "the anchors tuple against the model",
                         (unsigned)ch, anchor_num, anchor_num, 6 * anchor_num);
    bytes = scratch_bytes(w, h, ch, anchor_num, &nbox, &classes);
    if (bytes == 0)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "yolo2: output shape %ux%ux%u is too large",
                         (unsigned)w, (unsigned)h, (unsigned)ch);

    mem = okpu_alloc(alloc, bytes);
    if (!mem)
        return okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "yolo2: cannot allocate %lu bytes of scratch for %lu boxes",
                         (unsigned long)bytes, (unsigned long)nbox);
    wk.boxes = (double *)mem;
    wk.probs = wk.boxes + 4 * nbox;
    wk.order = (uint32_t *)(void *)(wk.probs + nbox * classes);
    wk.tmp = wk.order + nbox;
    wh = (size_t)w * h;

    /* 1-2. activations and boxes */
    for (n = 0; n < (size_t)anchor_num; n++) {
        const float *base = data + n * (5 + classes) * wh;
        double aw = params->anchors[2 * n], ah = params->anchors[2 * n + 1];
        for (i = 0; i < wh; i++) {
            size_t b = n * wh + i;
            double *box = wk.boxes + 4 * b;
            double *prob = wk.probs + b * classes;
            double obj, mx, sum;
            box[0] = ((double)(i % w) + sigmoid(base[i])) / w;
            box[1] = ((double)(i / w) + sigmoid(base[wh + i])) / h;
            box[2] = exp(base[2 * wh + i]) * aw / w;
            box[3] = exp(base[3 * wh + i]) * ah / h;
            obj = sigmoid(base[4 * wh + i]);
            mx = base[5 * wh + i];
            for (j = 1; j < classes; j++)
                if (base[(5 + j) * wh + i] > mx)
                    mx = base[(5 + j) * wh + i];
            sum = 0;
            for (j = 0; j < classes; j++) {
                prob[j] = exp(base[(5 + j) * wh + i] - mx);
                sum += prob[j];
            }
            for (j = 0; j < classes; j++) {
                double p = obj * prob[j] / sum;
                prob[j] = p > thresh ? p : 0;
            }
        }
    }

    /* 3. NMS per class */
    for (k = 0; k < classes; k++) {
        for (i = 0; i < nbox; i++)
            wk.order[i] = (uint32_t)i;
        sort_by_prob(wk.order, wk.tmp, nbox, wk.probs, classes, k);
        for (i = 0; i < nbox; i++) {
            const double *a = wk.boxes + 4 * (size_t)wk.order[i];
            if (wk.probs[(size_t)wk.order[i] * classes + k] == 0)
                continue;
            for (j = i + 1; j < nbox; j++) {
                double *pj = wk.probs + (size_t)wk.order[j] * classes + k;
                if (*pj != 0 && box_iou(a, wk.boxes + 4 * (size_t)wk.order[j]) > nms)
                    *pj = 0;
            }
        }
    }

    /* 4. emit */
    for (i = 0; i < nbox; i++) {
        const double *prob = wk.probs + i * classes;
        const double *box = wk.boxes + 4 * i;
        size_t best = 0;
        for (j = 1; j < classes; j++)
            if (prob[j] > prob[best])
                best = j;
        if (!(prob[best] > thresh))
            continue;
        if (found < out_cap) {
            double bw = box[2] * img_w, bh = box[3] * img_h;
            double x1 = clamp_px(box[0] * img_w - bw / 2, img_w);
            double y1 = clamp_px(box[1] * img_h - bh / 2, img_h);
            double x2 = clamp_px(box[0] * img_w + bw / 2, img_w);
            double y2 = clamp_px(box[1] * img_h + bh / 2, img_h);
            okpu_yolo2_box *o = out + found;
            o->x = (int)x1;
            o->y = (int)y1;
            o->w = x2 > x1 ? (int)(x2 - x1) : 0;
            o->h = y2 > y1 ? (int)(y2 - y1) : 0;
            o->value = (float)prob[best];
            o->classid = (int)best;
        }
        found++;
    }
    *count = found;
    okpu_free(alloc, mem, bytes);
    return OKPU_OK;
}
