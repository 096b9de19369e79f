"""Independent NumPy reference for the post-processing in c_src/post (docs/maixpy-kpu-api.md sections 3 and 4).

Written from the spec, vectorised, float64, sharing no code with the C implementation; the tests compare the two.
"""
import numpy as np


def region_decode(data, w, h, ch, anchors, threshold, nms, img_w, img_h):
    """YOLOv2 region decode. Returns a list of (x, y, w, h, value, classid) in emission order."""
    anchors = np.asarray(anchors, dtype=np.float64).reshape(-1, 2)
    num = anchors.shape[0]
    if ch % num or ch // num < 6:
        raise ValueError("channels %d do not fit %d anchors" % (ch, num))
    classes = ch // num - 5
    # (anchor, plane, row, col)
    t = np.asarray(data, dtype=np.float32).astype(np.float64).reshape(num, 5 + classes, h, w)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    bx = (cols[None] + sig(t[:, 0])) / w
    by = (rows[None] + sig(t[:, 1])) / h
    bw = np.exp(t[:, 2]) * anchors[:, 0, None, None] / w
    bh = np.exp(t[:, 3]) * anchors[:, 1, None, None] / h
    obj = sig(t[:, 4])
    logits = t[:, 5:]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    probs = obj[:, None] * soft  # (anchor, class, row, col)
    probs = np.where(probs > threshold, probs, 0.0)
    # box order: anchor-major, cells row-major
    boxes = np.stack([bx, by, bw, bh], axis=-1).reshape(-1, 4)
    probs = probs.transpose(0, 2, 3, 1).reshape(-1, classes).copy()
    n = boxes.shape[0]

    l = boxes[:, 0] - boxes[:, 2] / 2
    r = boxes[:, 0] + boxes[:, 2] / 2
    tp = boxes[:, 1] - boxes[:, 3] / 2
    bt = boxes[:, 1] + boxes[:, 3] / 2
    area = boxes[:, 2] * boxes[:, 3]

    def iou_one_to_many(i, js):
        iw = np.minimum(r[i], r[js]) - np.maximum(l[i], l[js])
        ih = np.minimum(bt[i], bt[js]) - np.maximum(tp[i], tp[js])
        inter = np.where((iw > 0) & (ih > 0), iw * ih, 0.0)
        union = area[i] + area[js] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((inter > 0) & (union > 0), inter / union, 0.0)

    for k in range(classes):
        order = np.argsort(-probs[:, k], kind="stable")
        for pos in range(n):
            i = order[pos]
            if probs[i, k] == 0:
                continue
            later = order[pos + 1:]
            later = later[probs[later, k] != 0]
            if later.size:
                kill = later[iou_one_to_many(i, later) > nms]
                probs[kill, k] = 0.0

    out = []
    best = probs.argmax(axis=1)  # first maximum wins
    for i in range(n):
        c = int(best[i])
        p = probs[i, c]
        if not p > threshold:
            continue
        x, y, bw_, bh_ = boxes[i]
        x1 = np.clip(x * img_w - bw_ * img_w / 2, 0, img_w)
        y1 = np.clip(y * img_h - bh_ * img_h / 2, 0, img_h)
        x2 = np.clip(x * img_w + bw_ * img_w / 2, 0, img_w)
        y2 = np.clip(y * img_h + bh_ * img_h / 2, 0, img_h)
        out.append((int(x1), int(y1), int(x2 - x1), int(y2 - y1), float(p), c))
    return out


def face_encode(seq):
    """int8(trunc(clamp(v, -0.25, 0.25) * 512)) with 128 clamped to 127 (MaixPy wrapped it to -128); NaN -> 0."""
    v = np.nan_to_num(np.asarray(seq, dtype=np.float32).astype(np.float64), nan=0.0)
    q = np.trunc(np.clip(v, -0.25, 0.25) * 512)
    return np.clip(q, -128, 127).astype(np.int8).tobytes()


def face_encode_maixpy(seq):
    """MaixPy's behaviour, bug included: 128 wraps to -128 (for the tests that show the fix)."""
    v = np.asarray(seq, dtype=np.float32).astype(np.float64)
    q = np.trunc(np.clip(v, -0.25, 0.25) * 512).astype(np.int64)
    return ((q + 128) % 256 - 128).astype(np.int8).tobytes()


def face_compare(a, b):
    """50 * (1 + cos) on the int8 vectors; 0.0 when either is all zeros (MaixPy: NaN)."""
    x = np.frombuffer(a, dtype=np.int8).astype(np.int64)
    y = np.frombuffer(b, dtype=np.int8).astype(np.int64)
    dot, na, nb = int(x @ y), int(x @ x), int(y @ y)
    if na == 0 or nb == 0:
        return 0.0
    return float(50.0 * (1.0 + dot / np.sqrt(float(na) * float(nb))))
