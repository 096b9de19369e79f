/* YOLOv2 region-layer decode (MaixPy's run_yolo2 post-processing), binding-agnostic.
 *
 * Input: the model's float output of shape (w, h, ch), anchor-major planar: for anchor n the planes
 * x, y, w, h, obj, class_0 .. class_{C-1}, each w*h floats row-major, so the value of plane p of anchor n at cell i
 * is data[(n * (5 + C) + p) * w * h + i].
 *
 * Math (docs/maixpy-kpu-api.md section 3): sigmoid on x, y, obj; softmax over the C class planes (max subtracted);
 * box = ((col + sx) / w, (row + sy) / h, exp(tw) * anchor[2n] / w, exp(th) * anchor[2n+1] / h);
 * prob_j = obj * softmax_j, zeroed unless > threshold; greedy NMS per class (boxes sorted by that class's prob,
 * descending, ties in box order; a box whose prob is still non-zero zeroes every later box with IoU > nms);
 * every box whose best class prob (first maximum wins) is > threshold is emitted, in box order (anchor 0 over all
 * cells row-major, then anchor 1, ...).
 *
 * What differs from MaixPy (its bugs, fixed):
 *  - classes = ch / anchor_num - 5 (MaixPy assumed 5 anchors: ch / 5 - 5); ch must be a multiple of anchor_num
 *    with at least one class, else OKPU_ERR_PARAM;
 *  - any number of detections (MaixPy wrote into a fixed 10-slot array);
 *  - the model output is only read (MaixPy sigmoided it in place): all work happens in a scratch buffer;
 *  - rectangles are clamped to the image: 0 <= x, 0 <= y, x + w <= img_w, y + h <= img_h (MaixPy converted
 *    negative floats to unsigned, undefined behaviour that happened to give 0 on the chip).
 * Arithmetic is in double. Non-finite model outputs never produce a detection from NaN and never reach an
 * int conversion.
 */
#ifndef OKPU_POST_YOLO2_H
#define OKPU_POST_YOLO2_H

#include "../okpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct okpu_yolo2_params {
    double threshold;      /* in [0, 1] */
    double nms;            /* IoU threshold, in [0, 1] */
    int anchor_num;        /* > 0 */
    const float *anchors;  /* 2 * anchor_num values: (w, h) per anchor, in output cells */
} okpu_yolo2_params;

typedef struct okpu_yolo2_box {
    int x, y, w, h;  /* rectangle in image pixels, clamped to the image */
    float value;     /* probability of the best class */
    int classid;     /* index of the best class */
} okpu_yolo2_box;

/* Upper bound on the number of detections: one per cell and anchor. Size `out` with this for a single pass. */
size_t okpu_yolo2_max_boxes(uint32_t w, uint32_t h, int anchor_num);

/* Bytes of scratch memory okpu_yolo2_decode takes from the allocator (0 if the shape is invalid). */
size_t okpu_yolo2_scratch_bytes(uint32_t w, uint32_t h, uint32_t ch, int anchor_num);

/* Decode `data` (w * h * ch floats, read only). Writes at most `out_cap` detections to `out` (may be NULL when
 * out_cap is 0) and stores the total number found in `*count`, so a caller can size `out` in a second pass or
 * once with okpu_yolo2_max_boxes(). img_w, img_h: the model's input size, the frame of the rectangles.
 * The scratch (okpu_yolo2_scratch_bytes) is allocated once through `alloc` (NULL = malloc) and freed before
 * returning. Returns OKPU_OK, OKPU_ERR_PARAM (bad shape / parameters) or OKPU_ERR_NO_MEM, with `err` filled. */
int okpu_yolo2_decode(const float *data, uint32_t w, uint32_t h, uint32_t ch, const okpu_yolo2_params *params,
                      int img_w, int img_h, const okpu_allocator *alloc, okpu_yolo2_box *out, size_t out_cap,
                      size_t *count, okpu_error *err);

#ifdef __cplusplus
}
#endif
#endif
