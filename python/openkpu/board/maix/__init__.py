# SPDX-License-Identifier: Apache-2.0
"""`maix`: MaixPy's later class API for the KPU (`from maix import KPU`), over the `KPU` module.

    from maix import KPU
    kpu = KPU()
    kpu.load_kmodel("/sd/yolo.kmodel")            # or kpu.load_kmodel(0x300000, size)
    kpu.init_yolo2(anchor, anchor_num=5, img_w=320, img_h=240, net_w=320, net_h=240,
                   layer_w=10, layer_h=8, threshold=0.5, nms_value=0.2, classes=20)
    kpu.run_with_output(img)                       # img: an image.Image of the model's input size
    for x, y, w, h, classid, prob in kpu.regionlayer_yolo2():
        ...
    feature = kpu.run_with_output(face, get_feature=True)   # L2-normalised floats (at most 256)
    score = kpu.feature_compare(feature, recorded)          # 0..100
    kpu.deinit()

As MaixPy documents it (its `maix.KPU` page; CanMV documents the same class): `load_kmodel(path)` or
`load_kmodel(flash_offset, size)`; `run_with_output(img, getlist=False, get_feature=False)` returns None, the
output as a list of floats (`getlist`) or the L2-normalised feature (`get_feature`, at most 256 values);
`init_yolo2(anchor, anchor_num=5, img_w=320, img_h=240, net_w=320, net_h=240, layer_w=10, layer_h=8,
threshold=0.7, nms_value=0.4, classes=1)`; `regionlayer_yolo2()` decodes the last run's output into
`[x, y, w, h, classid, prob]` lists (boxes in img_w x img_h pixels); `feature_compare(a, b)` is the cosine
similarity scaled to 0..100; `sigmoid(x)` and `softmax(list)` (also as `KPU.sigmoid` / `KPU.softmax`); `deinit()`.

openkpu additions, said so: `feature_map(index=0)`, the last run's output `index` as an fmap (the object
`KPU.forward` returns: `w() h() ch() typecode()`, `fmap[:]`, and `KPU.fmap(fm, ch)` channel images); errors say what
is wrong and what to do (MaixPy raises bare "path error!" / crashes on regionlayer_yolo2 before init_yolo2);
`load_kmodel(flash_offset)` may leave out the size (the model header gives it). The other names of MaixPy's
`Maix` board module (GPIO, FPIOA, freq, utils) are re-exported here, as CanMV's `maix` module has them.

This file is valid MicroPython (no f-strings, nothing CPython-only at import time), so it can be frozen into the
firmware next to KPU.py.
"""
import math

import KPU as _kpu
import _kpu as _kpu_core

try:  # the board-control names of MaixPy's Maix module (maix.GPIO, maix.FPIOA, ...), where there is one
    from Maix import GPIO, FPIOA, freq, utils  # noqa: F401
except ImportError:
    pass

MAX_FEATURE_LEN = 256


def sigmoid(x):
    """1 / (1 + e^-x)."""
    x = float(x)
    if x < -88.0:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


def softmax(values):
    """softmax of a list of numbers (max subtracted first), as a list of floats."""
    vals = [float(v) for v in values]
    if not vals:
        return []
    top = max(vals)
    exps = [math.exp(v - top) for v in vals]
    total = sum(exps)
    return [e / total for e in exps]


def l2normalize(values):
    vals = [float(v) for v in values]
    norm = math.sqrt(sum([v * v for v in vals]))
    if norm == 0.0:
        return vals
    return [v / norm for v in vals]


def feature_compare(a, b):
    """Cosine similarity of two features scaled to 0..100: 50 * (1 + cos); 0.0 when either is all zeros."""
    a = [float(v) for v in a]
    b = [float(v) for v in b]
    if len(a) != len(b):
        raise ValueError("feature_compare: the features have different lengths (%d and %d): compare features "
                         "of the same model" % (len(a), len(b)))
    if len(a) > MAX_FEATURE_LEN:
        raise ValueError("feature_compare: features have at most %d values, these have %d"
                         % (MAX_FEATURE_LEN, len(a)))
    dot = sum([x * y for x, y in zip(a, b)])
    na = math.sqrt(sum([x * x for x in a]))
    nb = math.sqrt(sum([y * y for y in b]))
    if na == 0.0 or nb == 0.0:
        return 0.0
    cos = dot / (na * nb)
    if cos > 1.0:
        cos = 1.0
    elif cos < -1.0:
        cos = -1.0
    return 50.0 * (1.0 + cos)


def _read_input(path):
    with open(path, "rb") as f:
        return f.read()


class KPU(object):
    """One model on the KPU (MaixPy's `maix.KPU` class)."""

    def __init__(self):
        self._net = None
        self._yolo = None
        self._ran = False

    # -- loading ------------------------------------------------------------------------------------------------
    def load_kmodel(self, path, size=0):
        """load_kmodel("/sd/m.kmodel") or load_kmodel(flash_offset, size)."""
        if isinstance(path, bool) or not isinstance(path, (str, int)):
            raise ValueError("load_kmodel(path) takes a file path (str) or a flash offset (int) and its size, "
                             "not %s" % type(path).__name__)
        if isinstance(path, int):
            if path <= 0:
                raise ValueError("load_kmodel(%d, ...): a flash offset must be > 0 (e.g. 0x300000)" % path)
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ValueError("load_kmodel(offset, size): size must be the model's byte count (an int >= 0), "
                                 "got %r" % (size,))
        if self._net is not None:
            self.deinit()
        net = _kpu.load(path)
        if isinstance(path, int) and size and size < net.model_size():
            _kpu.deinit(net)
            raise ValueError("load_kmodel(0x%x, %d): the model there is %d bytes; pass its size (or leave the "
                             "size out: the model header gives it)" % (path, size, net.model_size()))
        self._net = net
        self._ran = False
        return None

    def _loaded(self, what):
        if self._net is None:
            raise ValueError("KPU.%s: no model loaded: call load_kmodel(path) first" % what)
        return self._net

    # -- running ------------------------------------------------------------------------------------------------
    def run_with_output(self, input=None, getlist=False, get_feature=False):
        """Run the model on an image.Image (or a file of raw input bytes); None, or the output as a list."""
        net = self._loaded("run_with_output")
        if input is None:
            raise ValueError("run_with_output(img): give the input image (or a path to a raw input file)")
        data = _read_input(input) if isinstance(input, str) else input
        fm = _kpu.forward(net, data)
        self._ran = True
        if getlist or get_feature:
            vals = [float(v) for v in fm[:]]
            if get_feature:
                if len(vals) > MAX_FEATURE_LEN:
                    raise ValueError("run_with_output(get_feature=True): the output has %d values, a feature "
                                     "has at most %d: use getlist=True for this model"
                                     % (len(vals), MAX_FEATURE_LEN))
                return l2normalize(vals)
            return vals
        return None

    def feature_map(self, index=0):
        """The last run's output `index` as an fmap (openkpu addition; see the module docstring)."""
        net = self._loaded("feature_map")
        if not self._ran:
            raise ValueError("KPU.feature_map: nothing ran yet: call run_with_output(img) first")
        return _kpu.get_output(net, index)

    # -- YOLOv2 -------------------------------------------------------------------------------------------------
    def init_yolo2(self, anchor=None, anchor_num=5, img_w=320, img_h=240, net_w=320, net_h=240, layer_w=10,
                   layer_h=8, threshold=0.7, nms_value=0.4, classes=1):
        """Region-layer parameters for regionlayer_yolo2 (MaixPy's defaults)."""
        if anchor is None:
            raise ValueError("init_yolo2: need input anchor: init_yolo2(anchor, anchor_num=len(anchor)//2, ...)")
        anchors = tuple([float(a) for a in anchor])
        if isinstance(anchor_num, bool) or not isinstance(anchor_num, int) or anchor_num <= 0 \
                or len(anchors) != 2 * anchor_num:
            raise ValueError("init_yolo2: anchor has %d values, anchor_num=%r needs 2*anchor_num of them: pass "
                             "anchor_num=len(anchor)//2" % (len(anchors), anchor_num))
        for name, v in (("threshold", threshold), ("nms_value", nms_value)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 <= v <= 1.0):
                raise ValueError("init_yolo2: %s must be a number in [0, 1], got %r" % (name, v))
        for name, v in (("img_w", img_w), ("img_h", img_h), ("net_w", net_w), ("net_h", net_h),
                        ("layer_w", layer_w), ("layer_h", layer_h), ("classes", classes)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError("init_yolo2: %s must be an int > 0, got %r" % (name, v))
        self._yolo = (anchors, anchor_num, img_w, img_h, layer_w, layer_h, float(threshold), float(nms_value),
                      classes)
        return None

    def regionlayer_yolo2(self):
        """Decode the last run_with_output: a list of [x, y, w, h, classid, prob] (possibly empty)."""
        net = self._loaded("regionlayer_yolo2")
        if self._yolo is None:
            raise ValueError("regionlayer_yolo2: call init_yolo2(anchor, ...) first")
        if not self._ran:
            raise ValueError("regionlayer_yolo2: nothing ran yet: call run_with_output(img) first")
        anchors, anchor_num, img_w, img_h, layer_w, layer_h, threshold, nms, classes = self._yolo
        fm = _kpu.get_output(net, 0)
        if fm.typecode() != "f":
            raise ValueError("regionlayer_yolo2: the model's output is u8; a YOLO region layer needs its float "
                             "(dequantized) output")
        ch = anchor_num * (5 + classes)
        count = len(fm)
        if count != layer_w * layer_h * ch:
            raise ValueError("regionlayer_yolo2: the output has %d values, but layer_w x layer_h x anchor_num x "
                             "(5 + classes) = %d x %d x %d x %d = %d: check layer_w/layer_h/classes in init_yolo2"
                             % (count, layer_w, layer_h, anchor_num, 5 + classes, layer_w * layer_h * ch))
        boxes = _kpu_core.yolo2_decode(fm.data(), layer_w, layer_h, ch, anchors, threshold, nms, img_w, img_h)
        return [[b.x, b.y, b.w, b.h, b.classid, b.value] for b in boxes]

    # -- helpers and cleanup --------------------------------------------------------------------------------------
    @staticmethod
    def sigmoid(x):
        return sigmoid(x)

    @staticmethod
    def softmax(values):
        return softmax(values)

    @staticmethod
    def feature_compare(a, b):
        return feature_compare(a, b)

    def deinit(self):
        """Free the model now; True if one was loaded."""
        if self._net is None:
            return False
        _kpu.deinit(self._net)
        self._net = None
        self._yolo = None
        self._ran = False
        return True

    def __repr__(self):
        if self._net is None:
            return "type        : kmodel (KPU)\nmodel       : not loaded\n"
        return "type        : kmodel (KPU)\nmodel_size  : %d\n" % self._net.model_size()
