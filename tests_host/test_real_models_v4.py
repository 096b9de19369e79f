"""The real kmodel v4 files of ../shared/testdata through the _kpu binding (skipped, saying why, without the data).

Decoders written here in NumPy: YOLOv2 region layer (maixpy-kpu-api.md section 3) and the Ultra-Light-Fast face
detector (priors + variances + score > 0.3 + NMS, per ulffd_face_v4_nncase/README.md)."""
import struct

import numpy as np
import pytest

_kpu = pytest.importorskip("_kpu")
Image = pytest.importorskip("PIL.Image")

LABELS = ["aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable",
          "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor"]
ANCHORS = [1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52]


def load(path, **kw):
    return _kpu.Model(path.read_bytes(), **kw)


def planar_rgb(path, size=(320, 240)):
    img = Image.open(str(path)).convert("RGB")  # PIL returns BMP rows top-down
    assert img.size == size
    return np.ascontiguousarray(np.asarray(img, np.uint8).transpose(2, 0, 1)).tobytes()


def output_f32(m, i):
    data, tc, n, c, h, w, layer = m.output(i)
    assert tc == "f"
    return np.frombuffer(data, np.float32), (n, c, h, w)


# ---------------------------------------------------------------------------------------------------------------
# iris


def test_iris_v4_close_to_k210_digits(testdata):
    """The K210 digits 16.077795, 5.607656, -2.071745 were printed by the v3 example (the SDK's FULLY_CONNECTED:
    s = 0; s = fmaf(x, w, s) ...; y = s + bias). nncase v0.2 compiles the same network to transpose + matmul, whose
    kernel starts the accumulator AT THE BIAS and adds x*w (fmaf on the K210) in input order, so the rounding differs:
    the v4 graph gives 16.077793 (2 float32 ulps = 3.8e-6 below), 5.6076555 (prints 5.607656) and -2.0717452
    (prints -2.071745). Exact float32 values of that order are asserted, and the distance to the documented digits."""
    m = load(testdata("iris_fc_cpu_v3_v4", "iris_v4.kmodel"))
    assert m.inputs() == [("f", 1, 1, 1, 4, 16)]
    m.set_input(0, struct.pack("<4f", 5.1, 3.8, 1.9, 0.4))
    m.run()
    out, shape = output_f32(m, 0)
    assert shape == (1, 3, 1, 1)
    print("iris v4:", ["%.9g" % v for v in out])
    assert out.tolist() == [np.float32(16.07779312133789), np.float32(5.6076555252075195),
                            np.float32(-2.0717451572418213)]
    k210 = np.array([16.077795, 5.607656, -2.071745], np.float32)
    ulp = np.spacing(np.abs(k210))
    assert np.all(np.abs(out - k210) <= 2 * ulp + 1e-6)
    assert "%.6f, %.6f" % (out[1], out[2]) == "5.607656, -2.071745"


# ---------------------------------------------------------------------------------------------------------------
# YOLOv2 20 classes


def yolo2_decode(out, wo, ho, anchors, classes, threshold, nms, in_w=320, in_h=240):
    na = len(anchors) // 2
    o = np.asarray(out, np.float64).reshape(na, 5 + classes, ho * wo)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    boxes, probs = [], []
    for a in range(na):
        cls = o[a, 5:]
        e = np.exp(cls - cls.max(axis=0))
        sm = e / e.sum(axis=0)
        obj = sig(o[a, 4])
        for i in range(ho * wo):
            row, col = divmod(i, wo)
            x = (col + sig(o[a, 0, i])) / wo
            y = (row + sig(o[a, 1, i])) / ho
            w = np.exp(o[a, 2, i]) * anchors[2 * a] / wo
            h = np.exp(o[a, 3, i]) * anchors[2 * a + 1] / ho
            p = obj[i] * sm[:, i]
            p[p <= threshold] = 0
            boxes.append((x, y, w, h))
            probs.append(p)
    probs = np.array(probs)

    def iou(b1, b2):
        ix = max(0.0, min(b1[0] + b1[2] / 2, b2[0] + b2[2] / 2) - max(b1[0] - b1[2] / 2, b2[0] - b2[2] / 2))
        iy = max(0.0, min(b1[1] + b1[3] / 2, b2[1] + b2[3] / 2) - max(b1[1] - b1[3] / 2, b2[1] - b2[3] / 2))
        inter = ix * iy
        return inter / (b1[2] * b1[3] + b2[2] * b2[3] - inter)

    for k in range(classes):
        order = np.argsort(-probs[:, k], kind="stable")
        for ii, i in enumerate(order):
            if probs[i, k] == 0:
                continue
            for j in order[ii + 1:]:
                if probs[j, k] and iou(boxes[i], boxes[j]) > nms:
                    probs[j, k] = 0
    dets = []
    for i, (x, y, w, h) in enumerate(boxes):
        k = int(np.argmax(probs[i]))
        if probs[i, k] > threshold:
            dets.append((int(max(0, x * in_w - w * in_w / 2)), int(max(0, y * in_h - h * in_h / 2)), int(w * in_w),
                         int(h * in_h), float(probs[i, k]), LABELS[k]))
    return dets


def run_yolo(path, img):
    m = load(path)
    assert m.inputs() == [("B", 1, 3, 240, 320, 230400)]
    m.set_input(0, img)
    m.run()
    out, shape = output_f32(m, 0)
    assert shape == (1, 125, 7, 10)
    return out


YOLO_V4 = ["yolo.kmodel", "yolo_v0.2.0-alpha1_cpu_maxpool.kmodel"]


@pytest.mark.parametrize("name", YOLO_V4)
def test_yolo_v4_builds_find_bicycle_car_and_dog(testdata, name):
    """bicycle and car pass MaixPy's 0.5 threshold; the dog is found (right place, lower left) but scores below 0.5 on
    this emulator: measured 0.395 (beta build) and 0.295 (alpha build) against 0.595 for the v3 build. Checked at a
    0.25 threshold here; the test below shows the gap to 0.5 is the v4 builds' output quantisation."""
    img = planar_rgb(testdata("yolo2_voc20_v4_nncase", "dog.bmp"))
    out = run_yolo(testdata("yolo2_voc20_v4_nncase", name), img)
    dets = yolo2_decode(out, 10, 7, ANCHORS, 20, 0.5, 0.2)
    print(name, dets)
    assert {d[5] for d in dets} >= {"bicycle", "car"}
    low = yolo2_decode(out, 10, 7, ANCHORS, 20, 0.25, 0.2)
    dogs = [d for d in low if d[5] == "dog"]
    assert dogs and all(d[0] < 120 and d[1] > 50 for d in dogs), low
    print(name, "dog probability %.3f" % max(d[4] for d in dogs))


@pytest.mark.parametrize("name", YOLO_V4)
def test_yolo_v4_dog_objectness_within_quantisation_of_v3(testdata, name):
    """Why the dog scores below MaixPy's 0.5 on the v4 builds: at the v3 build's best dog cell the objectness logit is
    0.23, so the score (sigmoid(obj) * softmax) sits at the 0.5 edge in every build, and the v4 builds quantise the
    output in steps of 0.13-0.14. Their objectness there differs from v3's by less than two steps (measured 1.75 and
    0.64): a quantisation difference between the builds, not a fault of the emulator."""
    img = planar_rgb(testdata("yolo2_voc20_v4_nncase", "dog.bmp"))
    out = run_yolo(testdata("yolo2_voc20_v4_nncase", name), img).reshape(5, 25, 7, 10)
    v3 = load(testdata("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel"))
    v3.set_input(0, img)
    v3.run()
    o3 = np.frombuffer(v3.output(0)[0], np.float32).reshape(5, 25, 7, 10)
    dog = 5 + LABELS.index("dog")
    anchor, row, col = np.unravel_index(np.argmax(o3[:, dog]), o3[:, dog].shape)
    step = float(np.min(np.diff(np.unique(out))))
    gap = abs(float(o3[anchor, 4, row, col]) - float(out[anchor, 4, row, col])) / step
    print("%s: dog cell (anchor %d, row %d, col %d) objectness v3 %.4f, v4 %.4f, step %.4f: %.2f steps"
          % (name, anchor, row, col, o3[anchor, 4, row, col], out[anchor, 4, row, col], step, gap))
    assert 0.1 < step < 0.2
    assert gap < 2.0


@pytest.mark.parametrize("name", YOLO_V4)
def test_yolo_v4_agrees_with_v3_build(testdata, name):
    """Independent quantisations (nncase v0.1 rc5 vs v0.2) of the same float network. Measured on dog.bmp:
    beta build max |diff| 1.95, mean 0.24; alpha build max 3.03, mean 0.52 (printed). Bounds set just above."""
    img = planar_rgb(testdata("yolo2_voc20_v4_nncase", "dog.bmp"))
    out = run_yolo(testdata("yolo2_voc20_v4_nncase", name), img)
    v3 = load(testdata("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel"))
    v3.set_input(0, img)
    v3.run()
    o3 = np.frombuffer(v3.output(0)[0], np.float32)
    diff = np.abs(o3 - out)
    print("%s vs v3: max |diff| %.4f, mean %.4f, 99th pct %.4f, output range %.2f..%.2f"
          % (name, diff.max(), diff.mean(), np.percentile(diff, 99), out.min(), out.max()))
    assert diff.mean() < 0.8 and diff.max() < 4.5
    assert np.corrcoef(o3, out)[0, 1] > 0.95


# ---------------------------------------------------------------------------------------------------------------
# Ultra-Light-Fast face detector


def ulffd_priors(w=320, h=240):
    strides = [8, 16, 32, 64]
    min_boxes = [[10, 16, 24], [32, 48], [64, 96], [128, 192, 256]]
    pri = []
    for s, mb in zip(strides, min_boxes):
        fw, fh = int(np.ceil(w / s)), int(np.ceil(h / s))
        for j in range(fh):
            for i in range(fw):
                for k in mb:
                    pri.append([(i + 0.5) / (w / s), (j + 0.5) / (h / s), k / w, k / h])
    return np.clip(np.array(pri), 0.0, 1.0)


def ulffd_decode(scores, boxes, thr=0.3, iou=0.05):
    pri = ulffd_priors()
    assert len(pri) == 4420
    sc = scores.reshape(-1, 2)[:, 1]
    b = boxes.reshape(-1, 4)
    cx = b[:, 0] * 0.1 * pri[:, 2] + pri[:, 0]
    cy = b[:, 1] * 0.1 * pri[:, 3] + pri[:, 1]
    w = np.exp(b[:, 2] * 0.2) * pri[:, 2]
    h = np.exp(b[:, 3] * 0.2) * pri[:, 3]
    keep = np.where(sc > thr)[0]
    cand = sorted(keep, key=lambda i: -sc[i])
    rect = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    faces = []
    while cand:
        i = cand[0]
        x1 = np.maximum(rect[i, 0], rect[cand, 0])
        y1 = np.maximum(rect[i, 1], rect[cand, 1])
        x2 = np.minimum(rect[i, 2], rect[cand, 2])
        y2 = np.minimum(rect[i, 3], rect[cand, 3])
        inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
        area = (rect[cand, 2] - rect[cand, 0]) * (rect[cand, 3] - rect[cand, 1])
        ious = inter / (area[0] + area - inter)
        group = [c for c, v in zip(cand, ious) if v > iou]
        wts = np.exp(sc[group])
        faces.append((tuple((rect[group] * wts[:, None]).sum(0) / wts.sum()), float(sc[i])))
        cand = [c for c, v in zip(cand, ious) if v <= iou]
    return faces


@pytest.mark.parametrize("name,scores_idx", [("slim-320.kmodel", 0), ("RFB-320.kmodel", 1)])
def test_ulffd_finds_many_faces(testdata, name, scores_idx):
    m = load(testdata("ulffd_face_v4_nncase", name))
    m.set_input(0, planar_rgb(testdata("ulffd_face_v4_nncase", "face.jpg")))
    m.run()
    scores, _ = output_f32(m, scores_idx)
    boxes, _ = output_f32(m, 1 - scores_idx)
    assert scores.size == 8840 and boxes.size == 17680
    # scores come out of a quantized softmax over (background, face): pairs sum to ~1
    pairs = scores.reshape(-1, 2)
    assert np.all(np.abs(pairs.sum(1) - 1) < 0.1)
    faces = ulffd_decode(scores, boxes)
    print(name, len(faces), "faces; strongest", sorted(f[1] for f in faces)[-3:])
    assert len(faces) >= 10


def test_v5_model_refused_with_clear_message(testdata):
    data = testdata("mnist_v5_nncase_negative", "mnist_v5.kmodel").read_bytes()
    with pytest.raises(Exception) as e:
        _kpu.Model(data)
    msg = str(e.value)
    assert "2002" in msg and "nncase >= 1.0" in msg and "v0.2" in msg
