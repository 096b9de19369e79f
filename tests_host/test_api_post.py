"""KPU shim: YOLOv2 (init_yolo2 / run_yolo2), face_encode / face_compare, set_outputs (v4), load_flash, and the
image stand-in's drawing and ROI methods. MaixPy's bugs must stay fixed (docs/maixpy-kpu-api.md section 7)."""
import os
import struct
import sys

import numpy as np
import pytest

import KPU as kpu
from openkpu.board import image

VOC_ANCHORS = (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52)
FACE_ANCHORS = (1.889, 2.5245, 2.9465, 3.94056, 3.99987, 5.3658, 5.155437, 6.92275, 6.718375, 9.01025)


@pytest.fixture(autouse=True)
def no_flash_image():
    yield
    kpu.set_flash_image(None)


def yolo_v3(testdata):
    return kpu.load(str(testdata("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel")))


def test_run_yolo2_before_init_is_a_clear_error(testdata):
    net = yolo_v3(testdata)
    with pytest.raises(ValueError, match=r"2001.*init_yolo2"):
        kpu.run_yolo2(net, image.Image(str(testdata("yolo2_voc20_v3_nncase_rc5", "dog.bmp"))))
    kpu.deinit(net)


@pytest.mark.parametrize("args, needle", [
    ((1.5, 0.2, 5, VOC_ANCHORS), "threshold"),
    ((0.5, -0.1, 5, VOC_ANCHORS), "nms_value"),
    ((0.5, 0.2, 0, VOC_ANCHORS), "anchor_num"),
    ((0.5, 0.2, 5, VOC_ANCHORS[:8]), "2\\*anchor_num = 10"),
])
def test_init_yolo2_checks_its_arguments(testdata, args, needle):
    net = yolo_v3(testdata)
    with pytest.raises(ValueError, match="2001.*" + needle):
        kpu.init_yolo2(net, *args)
    kpu.deinit(net)


def test_run_yolo2_finds_dog_bicycle_car_and_leaves_output_untouched(testdata):
    net = yolo_v3(testdata)
    assert kpu.init_yolo2(net, 0.5, 0.2, 5, VOC_ANCHORS) is True
    img = image.Image(str(testdata("yolo2_voc20_v3_nncase_rc5", "dog.bmp")))
    before = kpu.forward(net, img).data()
    objs = kpu.run_yolo2(net, img)
    assert sorted(o.classid() for o in objs) == [1, 6, 11]  # bicycle, car, dog
    for i, o in enumerate(objs):
        assert o.index() == i and o.objnum() == len(objs)
        x, y, w, h = o.rect()
        assert (o.x(), o.y(), o.w(), o.h()) == (x, y, w, h)
        assert 0 <= x and 0 <= y and x + w <= 320 and y + h <= 240 and 0.5 < o.value() <= 1.0
        assert '"classid":%d' % o.classid() in repr(o)
    # MaixPy sigmoided the output in place: get_output must still return the model's numbers
    assert kpu.get_output(net, 0).data() == before
    kpu.deinit(net)
    kpu.deinit(net)  # MaixPy freed the yolo arguments twice here (board freeze)


def test_face_detector_through_flash_kfpkg_and_load_flash(testdata):
    img = image.Image(str(testdata("face_images_nncase", "21.jpg")))
    kpu.set_flash_image(str(testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")))
    net = kpu.load(0x300000)
    kpu.init_yolo2(net, 0.5, 0.3, 5, FACE_ANCHORS)
    faces = kpu.run_yolo2(net, img)
    assert len(faces) == 1
    ref = kpu.get_output(net, 0).data()
    kpu.deinit(net)
    # the word-swapped copy at 0x600000 is what load_flash reads; it must give the very same output
    kpu.set_flash_image(str(testdata("face_detect_yolo2_v3_maixpy", "face_model_be_at_0x600000.kfpkg")))
    net = kpu.load_flash(0x600000, 1, 0xC000, 60000000)
    assert kpu.forward(net, img).data() == ref
    kpu.deinit(net)
    # a model that is NOT word-swapped is refused by load_flash with the fix named
    kpu.set_flash_image(str(testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")))
    with pytest.raises(ValueError, match=r"2002.*NOT word-swapped.*kpu.load\(0x300000\)"):
        kpu.load_flash(0x300000, 0, 0, 60000000)
    with pytest.raises(ValueError, match="2001.*spi_speed"):
        kpu.load_flash(0x300000, 0, 0, 100000000)


def check_set_outputs_yolo_head(net, capsys):
    """MaixPy's set_outputs on a 20-class YOLOv2 head (10 x 7 x 125 values): a size that differs is refused with
    2012, an output index past the last with 2011, and the same size in another shape (70 x 1 x 125) is accepted."""
    assert kpu.set_outputs(net, 0, 10, 7, 12) is False
    assert "2012" in capsys.readouterr().out
    assert kpu.set_outputs(net, 1, 10, 7, 125) is False
    assert "2011" in capsys.readouterr().out
    assert kpu.set_outputs(net, 0, 70, 1, 125) is True


def test_set_outputs_v4_semantics(testdata, capsys):
    net = kpu.load(str(testdata("yolo2_voc20_v4_nncase", "yolo.kmodel")))
    img = image.Image(str(testdata("yolo2_voc20_v4_nncase", "dog.bmp")))
    fm = kpu.forward(net, img)  # works without set_outputs: shape from the model
    assert (fm.w(), fm.h(), fm.ch(), fm.typecode()) == (10, 7, 125, "f")
    check_set_outputs_yolo_head(net, capsys)
    fm = kpu.forward(net, img)
    assert (fm.w(), fm.h(), fm.ch()) == (70, 1, 125)
    kpu.deinit(net)


def test_face_encode_compare_fixed_bugs():
    enc = kpu.face_encode([0.25, -0.25, 0.1, -0.3, 0.5])
    assert list(struct.unpack("5b", bytes(enc))) == [127, -128, 51, -128, 127]  # MaixPy: 0.25 -> -128
    assert kpu.face_compare(enc, enc) == pytest.approx(100.0)
    zero = kpu.face_encode([0.0] * 5)
    assert kpu.face_compare(zero, enc) == 0.0  # MaixPy: NaN
    neg = kpu.face_encode([-0.25, 0.25, -0.1, 0.3, -0.5])
    assert kpu.face_compare(enc, neg) < 1.0


def test_face_encode_enforces_its_documented_limit():
    """docs/maixpy-kpu-api.md: face_encode quantises a feature vector of at most 512 floats; the shim enforces it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "maixpy-kpu-api.md")) as f:
        assert "quantise a feature vector (<= %d floats)" % kpu.FACE_FEATURES_MAX in f.read()
    assert kpu.FACE_FEATURES_MAX == 512
    assert len(kpu.face_encode([0.1] * 512)) == 512
    for too_many in ([0.1] * 513, tuple([0.0] * 1000)):
        with pytest.raises(ValueError) as e:
            kpu.face_encode(too_many)
        assert str(e.value) == ("[MAIXPY]kpu: face_encode error:2001, ERR_PARAM: the feature has %d values, at most "
                                "512 are encoded" % len(too_many))


def test_image_roi_and_drawing():
    img = image.Image()
    assert (img.width(), img.height()) == (320, 240)
    img.draw_rectangle((10, 20, 30, 40), color=(255, 0, 0), fill=True)
    assert img.get_pixel(10, 20) == (255, 0, 0) and img.get_pixel(9, 20) == (0, 0, 0)
    roi = img.copy((10, 20, 30, 40))
    assert (roi.width(), roi.height()) == (30, 40) and roi.get_pixel(29, 39) == (255, 0, 0)
    with pytest.raises(ValueError):
        img.copy((300, 0, 40, 10))
    cut = img.cut(0, 0, 16, 16)
    assert cut.draw_cross(8, 8, color=(0, 255, 0), size=3) is cut and cut.get_pixel(8, 8) == (0, 255, 0)
    assert cut.draw_circle(8, 8, 4, color=(0, 0, 255)).get_pixel(12, 8) == (0, 0, 255)
    before = img.to_bytes()
    img.draw_string(100, 100, "42", color=(255, 255, 255), scale=2)
    assert img.to_bytes() != before
    g = image.Image(width=8, height=8, format=image.GRAYSCALE, data=bytes(range(0, 128, 2)))
    g.strech_char()
    assert g.get_pixel(0, 0) == 0 and g.get_pixel(7, 7) == 255
