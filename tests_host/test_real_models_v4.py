"""The real kmodel v4 files of ../shared/testdata through the _kpu binding (skipped, saying why, without the data).

Decoders written here in NumPy: YOLOv2 region layer (docs/maixpy-kpu-api.md section 3) and the Ultra-Light-Fast face
detector (priors + variances + score > 0.3 + NMS, per ulffd_face_v4_nncase/README.md)."""
import itertools
import struct
from fractions import Fraction

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


def _f32_exact(v):
    """Round an exact rational to the nearest float32 (ties to even), as one float32 operation does."""
    f = np.float32(float(v))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - v), int(c.view(np.uint32)) & 1))


def _dense(x, w, bias, relu, bias_first, fused):
    """One float32 dense layer: y[c] = bias[c] + sum_i x[i] * w[i][c] in input order, with the bias first (nncase
    v0.2 matmul) or added last (SDK FULLY_CONNECTED), each step fused (fmaf) or a rounded product then a rounded sum."""
    out = []
    for c in range(w.shape[1]):
        acc = bias[c] if bias_first else np.float32(0)
        for i in range(w.shape[0]):
            prod = Fraction(float(x[i])) * Fraction(float(w[i, c]))
            acc = _f32_exact(prod + Fraction(float(acc)) if fused else
                             Fraction(float(_f32_exact(prod))) + Fraction(float(acc)))
        if not bias_first:
            acc = _f32_exact(Fraction(float(acc)) + Fraction(float(bias[c])))
        out.append(max(acc, np.float32(0)) if relu else acc)
    return np.array(out, np.float32)


def test_iris_documented_digits_need_the_hidden_layer_bias_added_last(testdata):
    """Where 16.077795 comes from. The v4 file's own weights (read here from its bytes: two transposes of constants
    into main memory, two matmuls), run in exact float32 in the four ways a K210 runtime could order the hidden layer
    (bias first / last, fused / unfused) and the output layer as nncase v0.2 does: the documented first digit
    appears only when the hidden layer adds its bias LAST, as the v3 SDK's FULLY_CONNECTED does; nncase v0.2's
    matmul (bias first, fmaf) gives the emulator's 16.077793. (The v4 example's README carries the v3 README's
    result block unchanged, only the usage steps above it were edited: the digits were most likely never re-measured.)"""
    from kpu_layers_from_file import v4_constants, v4_layout, v4_nodes
    data = testdata("iris_fc_cpu_v3_v4", "iris_v4.kmodel").read_bytes()
    hdr = v4_layout(data)[0]
    consts = v4_constants(data)
    main = bytearray(hdr[5])
    main[0:16] = struct.pack("<4f", 5.1, 3.8, 1.9, 0.4)
    dense = []
    for opcode, body in v4_nodes(data):
        src, dst = struct.unpack_from("<4I", body, 0), struct.unpack_from("<4I", body, 16)
        if opcode == 0x0C:  # transpose: weights from the constants into main memory
            shape, perm = struct.unpack_from("<4i", body, 32), struct.unpack_from("<4i", body, 48)
            w = np.frombuffer(consts, np.float32, src[3] // 4, src[2]).reshape(shape).transpose(perm)
            main[dst[2]:dst[2] + dst[3]] = np.ascontiguousarray(w).tobytes()
        elif opcode == 0x04:  # matmul a x b + bias, fused clamp
            b_range = struct.unpack_from("<4I", body, 16)
            rows, cols, bcols = struct.unpack_from("<3i", body, 48)
            lo = struct.unpack_from("<f", body, 60)[0]
            w = np.frombuffer(bytes(main[b_range[2]:b_range[2] + b_range[3]]), np.float32).reshape(cols, bcols)
            dense.append((src[2], w.copy(), np.frombuffer(body, np.float32, bcols, 68).copy(), lo == 0.0))
    assert len(dense) == 2 and dense[0][3] and not dense[1][3]
    x = np.frombuffer(bytes(main[0:16]), np.float32)
    first = {}
    for bias_first, fused in itertools.product((True, False), repeat=2):
        hidden = _dense(x, *dense[0][1:], bias_first=bias_first, fused=fused)
        y = _dense(hidden, *dense[1][1:], bias_first=True, fused=True)
        first[(bias_first, fused)] = "%.6f" % y[0]
    print("iris v4 first output by hidden-layer order (bias_first, fused):", first)
    assert first[(True, True)] == "16.077793"  # nncase v0.2 matmul on a K210 (the emulator's result)
    assert first[(False, True)] == first[(False, False)] == "16.077795"  # bias last: the documented digits
    assert first[(True, False)] != "16.077795"


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


# The v4 builds against the v3 build, layer by layer: where the difference in the dog's score comes from.

V3_YOLO = ("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel")
V4_DIR = "yolo2_voc20_v4_nncase"


def _layer_outputs(path, img, nodes):
    """u8 output of each listed node (the model run from the start and stopped after it)."""
    m = load(path)
    outs = {}
    for k in nodes:
        m.set_input(0, img)
        m.run(k + 1)
        data, tc = m.output(0)[:2]
        assert tc == "B"
        outs[k] = np.frombuffer(data, np.uint8).copy()
    return outs


def _affine_fit(a, b):
    """(slope, offset) of the least-squares line b ~ slope * a + offset over all elements."""
    a = a.astype(np.float64).ravel()
    return np.linalg.lstsq(np.vstack([a, np.ones_like(a)]).T, b.astype(np.float64).ravel(), rcond=None)[0]


def _requantise(x, slope, offset):
    return np.clip(np.round(slope * x.astype(np.float64) + offset), 0, 255).astype(np.uint8)


def test_yolo_v4_beta_is_the_v3_network_with_other_activation_ranges(testdata):
    """Why the beta build's outputs (and the dog's score) differ from the v3 build's, settled from the files alone.

    1. The beta build holds the v3 build's weights: every layer has the same weight zero point (arg_x) and 12 of the
       16 layers bit-identical u8 weights (the other four differ in under 1% of them, by rounding). What differs is
       the activation quantisation: input zero points (arg_w), batch-norm and activation tables, i.e. the value
       ranges nncase v0.2's calibration chose for each feature map.
    2. Every KPU layer of the beta build, run by the NumPy reference (kpu_reference.py, from the file's bytes), equals
       the emulator's output bit for bit along the build's own chain.
    3. Each beta layer fed the v3 build's previous-layer output (re-quantised onto the beta build's scale) agrees
       with the v3 layer to within the rounding noise of two quantisations: rms under 1.1 of the beta build's output
       steps (measured 0.46-1.01; layer 0, same input, 0.57). No layer stands out, so the end-to-end difference
       (see test_yolo_v4_agrees_with_v3_build) is that noise compounded over 16 layers, not an emulator fault."""
    kref = pytest.importorskip("kpu_reference")
    from kpu_layers_from_file import v3_kpu_layers, v4_kpu_layers
    v3_path, v4_path = testdata(*V3_YOLO), testdata(V4_DIR, "yolo.kmodel")
    l3, l4 = v3_kpu_layers(v3_path.read_bytes()), v4_kpu_layers(v4_path.read_bytes())
    assert len(l3) == len(l4) == 16
    differing = [i for i in range(16) if not np.array_equal(l3[i].weights, l4[i].weights)]
    assert len(differing) <= 4
    assert all(np.mean(l3[i].weights != l4[i].weights) < 0.01 for i in differing)
    assert [(c.arg_x, c.shr_x) for c in l3] != [(c.arg_x, c.shr_x) for c in l4]  # stored with other shifts ...
    assert [c.arg_x / 2 ** c.shr_x for c in l3] == [c.arg_x / 2 ** c.shr_x for c in l4]  # ... same zero point

    img = planar_rgb(testdata(V4_DIR, "dog.bmp"))
    o3, o4 = _layer_outputs(v3_path, img, range(15)), _layer_outputs(v4_path, img, range(15))
    x0 = np.frombuffer(img, np.uint8).reshape(3, 240, 320)
    rms = []
    for k in range(15):
        x4 = x0 if k == 0 else o4[k - 1].reshape(l4[k].in_shape)
        own, _ = kref.kpu_layer(x4, l4[k])
        assert np.array_equal(own.ravel(), o4[k]), "layer %d: reference != emulator" % k
        if k == 0:
            fed = own
        else:  # the v3 build's previous output, on the beta build's scale
            x3 = _requantise(o3[k - 1], *_affine_fit(o3[k - 1], o4[k - 1]))
            fed, _ = kref.kpu_layer(x3.reshape(l4[k].in_shape), l4[k])
        slope, offset = _affine_fit(o3[k], fed)
        resid = fed.ravel().astype(np.float64) - (slope * o3[k].astype(np.float64) + offset)
        rms.append(float(np.sqrt(np.mean(resid ** 2))))
    print("beta build, per-layer rms difference from v3 in its own output steps:", ["%.2f" % r for r in rms])
    assert max(rms) < 1.1


def test_yolo_v4_alpha_build_quantises_weights_per_tensor(testdata):
    """The alpha build (nncase v0.2.0-alpha1) stores ONE batch-norm multiplier per layer where the v3 and beta builds
    store one per output channel: its weights are quantised per tensor, so channels with small weights keep few
    levels (depthwise layer 9: a median of 5 distinct values per channel against 9 in the other builds). That costs
    accuracy on its own, which is why it scores the dog lowest (0.295). Its KPU layers still match the NumPy
    reference bit for bit along its own chain (including the layers after its CPU max-pool and kpu_upload)."""
    kref = pytest.importorskip("kpu_reference")
    from kpu_layers_from_file import v3_kpu_layers, v4_kpu_layers, v4_nodes, V4_KPU_CONV2D
    path = testdata(V4_DIR, "yolo_v0.2.0-alpha1_cpu_maxpool.kmodel")
    data = path.read_bytes()
    alpha, v3 = v4_kpu_layers(data), v3_kpu_layers(testdata(*V3_YOLO).read_bytes())
    assert [len(set(c.bn_mul)) for c in alpha] == [1] * 16
    assert [len(set(c.bn_mul)) > 1 for c in v3] == [True] * 16

    def levels(c):
        return int(np.median([len(np.unique(w)) for w in c.weights]))
    assert levels(alpha[9]) < levels(v3[9])

    conv_nodes = [i for i, (op, _) in enumerate(v4_nodes(data)) if op == V4_KPU_CONV2D]
    img = planar_rgb(testdata(V4_DIR, "dog.bmp"))
    inputs = [n - 1 for n in conv_nodes if n > 0]
    outs = _layer_outputs(path, img, sorted(set(conv_nodes + inputs)))
    for layer, node in zip(alpha, conv_nodes):
        x = np.frombuffer(img, np.uint8) if node == 0 else outs[node - 1]
        ref, _ = kref.kpu_layer(x.reshape(layer.in_shape), layer)
        assert np.array_equal(ref.ravel(), outs[node]), "node %d: reference != emulator" % node


def test_yolo_dog_score_sits_at_the_threshold_even_on_v3(testdata):
    """The issue's "finds the dog" at MaixPy's 0.5 threshold is a knife edge for every build: two grey levels of
    noise on dog.bmp (seeded, 12 draws) move even the v3 build's dog score (0.595 clean) below 0.5 in some draws.
    Measured: v3 0.45-0.68, beta 0.39-0.54, alpha 0.00-0.37 (printed)."""
    clean = np.frombuffer(planar_rgb(testdata(V4_DIR, "dog.bmp")), np.uint8)
    rng = np.random.default_rng(1)
    draws = [clean] + [np.clip(clean.astype(np.int16) + rng.integers(-2, 3, clean.size), 0, 255).astype(np.uint8)
                       for _ in range(12)]
    scores = {}
    for name, path in (("v3", testdata(*V3_YOLO)), ("beta", testdata(V4_DIR, "yolo.kmodel")),
                       ("alpha", testdata(V4_DIR, "yolo_v0.2.0-alpha1_cpu_maxpool.kmodel"))):
        m = load(path)
        scores[name] = []
        for x in draws:
            m.set_input(0, x.tobytes())
            m.run()
            out = np.frombuffer(m.output(0)[0], np.float32)
            dogs = [d[4] for d in yolo2_decode(out, 10, 7, ANCHORS, 20, 0.01, 0.2) if d[5] == "dog"]
            scores[name].append(max(dogs, default=0.0))
        print("%s dog score: clean %.3f, noisy %.3f..%.3f" % (name, scores[name][0], min(scores[name][1:]),
                                                              max(scores[name][1:])))
    assert scores["v3"][0] > 0.5
    assert min(scores["v3"][1:]) < 0.5 < max(scores["v3"][1:])


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
    # kmodel v5 loads since issue 15; its pre-release layout stays refused
    data = testdata("kmodel_v5_nncase", "yolox_nano_224_old.kmodel").read_bytes()
    with pytest.raises(Exception) as e:
        _kpu.Model(data)
    msg = str(e.value)
    assert "2002" in msg and "nncase >= 1.0" in msg and "v0.2" in msg
