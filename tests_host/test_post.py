# SPDX-License-Identifier: Apache-2.0
"""The C post-processing (via _kpu) against the independent NumPy reference in yolo_reference.py.

Not skipped when the functions are missing: until `_kpu` exports yolo2_decode / face_encode / face_compare (module
init calling okpu_py_add_post) these tests fail, as they should.
"""
import array
import math

import numpy as np
import pytest

import _kpu
import yolo_reference as ref

# VOC tiny-YOLOv2 anchors, extended cyclically for other anchor counts
BASE_ANCHORS = [1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52, 2.0, 7.0, 12.0, 3.0]


def random_output(rng, w, h, anchor_num, classes):
    planes = []
    for _ in range(anchor_num):
        xy = rng.normal(0, 1.5, (2, h, w))
        wh = rng.normal(0, 0.7, (2, h, w))
        obj = rng.normal(-0.5, 2.5, (1, h, w))
        cls = rng.normal(0, 3.0, (classes, h, w))
        planes.append(np.concatenate([xy, wh, obj, cls]))
    return np.concatenate(planes).astype(np.float32)


def assert_same(got, want):
    assert len(got) == len(want), (got, want)
    for g, r in zip(got, want):
        assert g[:4] == r[:4] and g[5] == r[5], (g, r)
        assert math.isclose(g[4], r[4], rel_tol=1e-6), (g, r)


@pytest.mark.parametrize("classes", [1, 3, 20])
@pytest.mark.parametrize("anchor_num", [1, 3, 5, 7])
def test_yolo2_decode_matches_reference(classes, anchor_num):
    rng = np.random.default_rng(1000 * classes + anchor_num)
    anchors = BASE_ANCHORS[: 2 * anchor_num]
    total = 0
    for w, h, img_w, img_h, thr, nms in [(10, 7, 320, 240, 0.5, 0.2), (20, 15, 320, 240, 0.3, 0.45),
                                         (7, 7, 224, 224, 0.6, 0.3), (4, 4, 64, 64, 0.2, 0.0)]:
        data = random_output(rng, w, h, anchor_num, classes)
        ch = anchor_num * (5 + classes)
        before = data.copy()
        got = _kpu.yolo2_decode(data.tobytes(), w, h, ch, anchors, thr, nms, img_w, img_h)
        want = ref.region_decode(data, w, h, ch, anchors, thr, nms, img_w, img_h)
        assert_same(got, want)
        assert np.array_equal(before, data)
        for x, y, bw, bh, _v, c in got:
            assert 0 <= x and 0 <= y and x + bw <= img_w and y + bh <= img_h
            assert 0 <= c < classes
        total += len(got)
    assert total > 0  # the random outputs do produce detections


def test_yolo2_input_forms_and_readonly():
    rng = np.random.default_rng(7)
    data = random_output(rng, 10, 7, 5, 20)
    anchors = tuple(BASE_ANCHORS[:10])
    want = _kpu.yolo2_decode(data.tobytes(), 10, 7, 125, anchors, 0.3, 0.2, 320, 240)
    assert want
    buf = array.array("f", data.ravel().tolist())
    assert _kpu.yolo2_decode(buf, 10, 7, 125, list(anchors), 0.3, 0.2, 320, 240) == want
    assert _kpu.yolo2_decode(tuple(data.ravel().tolist()), 10, 7, 125, anchors, 0.3, 0.2, 320, 240) == want
    assert _kpu.yolo2_decode(memoryview(buf), 10, 7, 125, anchors, 0.3, 0.2, 320, 240) == want
    assert buf.tolist() == data.ravel().tolist()  # not sigmoided in place (MaixPy bug)


def test_yolo2_many_detections():
    # every one of 300 cells holds a small object: MaixPy overflowed a 10-slot array
    w, h = 20, 15
    data = np.full((6, h, w), 0.0, dtype=np.float32)
    data[2:4] = -1.5  # small boxes, no overlap
    data[4] = 3.0
    got = _kpu.yolo2_decode(data.tobytes(), w, h, 6, (1.0, 1.0), 0.5, 0.3, 320, 240)
    assert len(got) == 300
    assert_same(got, ref.region_decode(data, w, h, 6, (1.0, 1.0), 0.5, 0.3, 320, 240))


def test_yolo2_classes_from_anchor_num():
    # 3 anchors x (5 + 20): MaixPy's ch/5 - 5 would give 10 classes and read the wrong planes
    rng = np.random.default_rng(3)
    data = random_output(rng, 10, 7, 3, 20)
    got = _kpu.yolo2_decode(data.tobytes(), 10, 7, 75, BASE_ANCHORS[:6], 0.3, 0.3, 320, 240)
    assert any(c >= 10 for *_r, c in got)


@pytest.mark.parametrize("ch, anchors", [(76, BASE_ANCHORS[:6]), (15, BASE_ANCHORS[:6]), (75, BASE_ANCHORS[:5]),
                                         (75, [])])
def test_yolo2_bad_shape(ch, anchors):
    with pytest.raises(ValueError, match="2001"):
        _kpu.yolo2_decode(bytes(10 * 7 * ch * 4), 10, 7, ch, anchors, 0.5, 0.3, 320, 240)


def test_yolo2_bad_params():
    data = bytes(10 * 7 * 30 * 4)
    with pytest.raises(ValueError, match="2001"):
        _kpu.yolo2_decode(data, 10, 7, 30, BASE_ANCHORS[:10], 1.5, 0.3, 320, 240)
    with pytest.raises(ValueError, match="expected 2100"):
        _kpu.yolo2_decode(data[:-4], 10, 7, 30, BASE_ANCHORS[:10], 0.5, 0.3, 320, 240)
    with pytest.raises(TypeError):
        _kpu.yolo2_decode(12, 10, 7, 30, BASE_ANCHORS[:10], 0.5, 0.3, 320, 240)


def test_face_encode_matches_reference():
    rng = np.random.default_rng(11)
    for n in (1, 128, 192, 512, 1000):
        v = rng.normal(0, 0.15, n).astype(np.float32)
        v[:3] = [0.25, -0.25, 0.3][: min(3, n)] if n >= 3 else v[:3]
        assert _kpu.face_encode(v.tolist()) == ref.face_encode(v)
        assert _kpu.face_encode(v.tobytes()) == ref.face_encode(v)


def test_face_encode_plus_quarter_does_not_wrap():
    q = _kpu.face_encode([0.25, 0.3, -0.25, -1.0, 0.0, 0.1, -0.1])
    assert list(np.frombuffer(q, np.int8)) == [127, 127, -128, -128, 0, 51, -51]
    assert ref.face_encode_maixpy([0.25]) == b"\x80"  # MaixPy: -128, the bug fixed above


def test_face_compare_matches_reference():
    rng = np.random.default_rng(12)
    for _ in range(50):
        a = ref.face_encode(rng.normal(0, 0.1, 192))
        b = ref.face_encode(rng.normal(0, 0.1, 192))
        assert math.isclose(_kpu.face_compare(a, b), ref.face_compare(a, b), rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(_kpu.face_compare(a, a), 100.0, rel_tol=1e-12)
    a = ref.face_encode(rng.normal(0, 0.1, 192))
    neg = bytes((-x) & 0xFF if x != -128 else 127 for x in np.frombuffer(a, np.int8).tolist())
    assert _kpu.face_compare(a, neg) < 1.0


def test_face_compare_zero_vector_is_defined():
    a = ref.face_encode(np.full(192, 0.1))
    zero = bytes(192)
    for x, y in ((a, zero), (zero, a), (zero, zero), (b"", b"")):
        s = _kpu.face_compare(x, y)
        assert s == 0.0 and not math.isnan(s)
        assert s == ref.face_compare(x, y)
    # features that quantise to zero (|v| < 1/512) give a zero vector too
    assert _kpu.face_compare(_kpu.face_encode([0.001] * 192), a) == 0.0


def test_face_compare_length_mismatch():
    with pytest.raises(ValueError, match="2001"):
        _kpu.face_compare(bytes(192), bytes(196))
