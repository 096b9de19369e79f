#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Train openkpu's own demo model on scikit-learn's bundled 8x8 digits and write it as a kmodel v3.

    python scripts/train_digits.py [--out examples/models/digits.kmodel] [--check]
    python scripts/train_digits.py --frames DIR [--count N]   # held-out digits as camera frames, no training

Offline and deterministic: `sklearn.datasets.load_digits` (1797 8x8 images shipped inside scikit-learn), a fixed
train / held-out split (seeded permutation: 1347 / 450), fixed seeds, plain NumPy training (no framework), so
re-running gives the identical file.

Network (input 8x8x1 u8, pixel = round(v * 255 / 16) of the 0..16 dataset values):
  0 K210_CONV      3x3, 1 -> 8 channels, ReLU, 2x2 max pool -> 4x4x8 (also copied to main memory)
  1 K210_ADD_PADDING   the 128 bytes (NCHW) as 128 channels, each at pixel (0,0) of a 4x4 map
  2 K210_CONV      1x1, 128 -> 32, ReLU         (a fully-connected layer on the KPU)
  3 K210_CONV      1x1, 32 -> 10, linear (zero point in the BN add)
  4 K210_REMOVE_PADDING  pixel (0,0) of each of the 10 maps
  5 DEQUANTIZE     10 logits
  6 SOFTMAX        10 probabilities (the model's output, float32)

Quantisation (post-training, calibrated on the training set): activations u8 with zero point 0 after ReLU (scale =
max / 255), the last layer's logits u8 with a zero point; weights u8 with a per-layer zero point 128 and a
per-output-channel scale (max |w| / 127). The KPU's offset terms implement the zero points exactly
(arg_x = -128, arg_w = -x_zp, arg_add = k*k*x_zp*128, pad_value = x_zp); the BN stage carries scale and bias
(norm_shift 15), the activation table a ReLU with a rounding shift. The held-out accuracy is measured by running
the written kmodel in the emulator (_kpu), not the float model.
"""
import argparse
import hashlib
import os
import pathlib
import sys

# Bit-identical training on any x86-64 machine: one BLAS thread and one fixed OpenBLAS kernel set (NumPy wheels pick
# kernels by CPU at run time, and AVX-512 kernels sum in another order than AVX2 ones). Only effective when NumPy
# is first imported here, i.e. when this file is run as a script (the test runs it in a subprocess).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from openkpu import kmodel_writer as kw  # noqa: E402

DEFAULT_OUT = ROOT / "examples" / "models" / "digits.kmodel"
SEED = 20240601
N_TRAIN = 1347
C0, HIDDEN, CLASSES = 8, 32, 10


# -- data -------------------------------------------------------------------------------------------------------
def load_data():
    from sklearn.datasets import load_digits
    d = load_digits()
    pix = np.rint(d.images * (255.0 / 16.0)).astype(np.uint8)  # (N, 8, 8) u8, what the camera / image gives
    order = np.random.default_rng(SEED).permutation(len(pix))
    tr, te = order[:N_TRAIN], order[N_TRAIN:]
    return pix[tr], d.target[tr], pix[te], d.target[te]


# -- float model (NumPy, manual backprop) ---------------------------------------------------------------------------
def im2col(x):
    """(N, 8, 8) -> (N, 64, 9): 3x3 patches with zero padding, row-major taps."""
    n = x.shape[0]
    p = np.zeros((n, 10, 10), x.dtype)
    p[:, 1:9, 1:9] = x
    cols = np.stack([p[:, dy:dy + 8, dx:dx + 8] for dy in range(3) for dx in range(3)], axis=-1)
    return cols.reshape(n, 64, 9)


def forward(params, x, keep=False):
    w0, b0, w1, b1, w2, b2 = params
    cols = im2col(x)                                   # (N, 64, 9)
    z0 = cols @ w0.reshape(C0, 9).T + b0               # (N, 64, C0)
    a0 = np.maximum(z0, 0).reshape(-1, 4, 2, 4, 2, C0)  # (N, y, dy, x, dx, C)
    pooled = a0.max(axis=(2, 4))                       # (N, 4, 4, C0)
    flat = pooled.transpose(0, 3, 1, 2).reshape(-1, C0 * 16)  # NCHW order, as the KPU copies it to main memory
    z1 = flat @ w1.T + b1
    a1 = np.maximum(z1, 0)
    logits = a1 @ w2.T + b2
    if keep:
        return logits, (cols, z0, a0, pooled, flat, z1, a1)
    return logits


def train(xtr, ytr, epochs=120, batch=64, lr=3e-3):
    rng = np.random.default_rng(SEED)
    params = [rng.normal(0, np.sqrt(2 / 9), (C0, 1, 3, 3)), np.zeros(C0),
              rng.normal(0, np.sqrt(2 / (C0 * 16)), (HIDDEN, C0 * 16)), np.zeros(HIDDEN),
              rng.normal(0, np.sqrt(1 / HIDDEN), (CLASSES, HIDDEN)), np.zeros(CLASSES)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    x = xtr.astype(np.float64) / 255.0
    step = 0
    for _epoch in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            xb, yb = x[idx], ytr[idx]
            logits, (cols, z0, a0, pooled, flat, z1, a1) = forward(params, xb, keep=True)
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob = e / e.sum(axis=1, keepdims=True)
            g = prob
            g[np.arange(len(yb)), yb] -= 1
            g /= len(yb)
            w0, b0, w1, b1, w2, b2 = params
            gw2, gb2 = g.T @ a1, g.sum(0)
            ga1 = g @ w2
            gz1 = ga1 * (z1 > 0)
            gw1, gb1 = gz1.T @ flat, gz1.sum(0)
            gflat = gz1 @ w1
            gpool = gflat.reshape(-1, C0, 4, 4).transpose(0, 2, 3, 1)  # (N, 4, 4, C0)
            mask = a0 == pooled[:, :, None, :, None, :]
            # route the gradient to the (first) max of each window
            first = mask & (np.cumsum(np.cumsum(mask, axis=2), axis=4) == 1)
            ga0 = first * gpool[:, :, None, :, None, :]
            gz0 = ga0.reshape(-1, 64, C0) * (z0 > 0)
            gw0 = np.einsum("npc,npk->ck", gz0, cols).reshape(C0, 1, 3, 3)
            gb0 = gz0.sum((0, 1))
            grads = [gw0, gb0, gw1, gb1, gw2, gb2]
            step += 1
            for j, (p, gr) in enumerate(zip(params, grads)):
                gr = gr + (1e-4 * p if p.ndim > 1 else 0)
                m[j] = 0.9 * m[j] + 0.1 * gr
                v[j] = 0.999 * v[j] + 0.001 * gr * gr
                p -= lr * (m[j] / (1 - 0.9 ** step)) / (np.sqrt(v[j] / (1 - 0.999 ** step)) + 1e-8)
    return params


# -- quantisation and kmodel ---------------------------------------------------------------------------------------
BN_SHIFT = 15


def quant_conv(w, b, s_in, z_in, s_out, z_out, kernel, relu):
    """KpuConv fields for float weights w (oc, ic, k, k), bias b, input (s_in, z_in) -> output (s_out, z_out)."""
    oc = w.shape[0]
    sw = np.maximum(np.abs(w).reshape(oc, -1).max(axis=1), 1e-8) / 127.0
    wq = np.clip(np.rint(w / sw[:, None, None, None]) + 128, 0, 255).astype(np.uint8)
    ratio = s_in * sw / s_out
    # the largest activation shift that keeps every norm_mul in s24
    act_shift = int(np.floor(np.log2((2 ** 23 - 1) / (ratio.max() * 2 ** BN_SHIFT))))
    act_shift = max(0, min(act_shift, 20))
    mul = np.rint(ratio * 2.0 ** (act_shift + BN_SHIFT)).astype(np.int64)
    add = np.rint((b / s_out + z_out) * 2.0 ** act_shift).astype(np.int64)
    taps = kernel * kernel
    fields = dict(in_c=w.shape[1], out_c=oc, kernel=kernel, weights=wq, bn_mul=[int(v) for v in mul],
                  bn_add=[int(v) for v in add], bn_shift=[BN_SHIFT] * oc, act=kw.ActTable.linear(1, act_shift),
                  pad_value=int(z_in), arg_x=-128, shr_x=0, arg_w=-int(z_in), shr_w=0,
                  arg_add=int(taps * z_in * 128))
    return fields


def build_model(params, xtr):
    w0, b0, w1, b1, w2, b2 = params
    logits, (cols, z0, a0, pooled, flat, z1, a1) = forward(params, xtr.astype(np.float64) / 255.0, keep=True)
    s_x = 1.0 / 255.0
    s0 = max(float(pooled.max()), 1e-6) / 255.0
    s1 = max(float(a1.max()), 1e-6) / 255.0
    lo, hi = float(min(logits.min(), 0.0)), float(max(logits.max(), 0.0))
    s2 = (hi - lo) / 255.0
    z2 = int(np.rint(-lo / s2))

    in_rows = kw.kpu_map_rows(8, 8, 1)
    r0 = in_rows                       # conv0 output 4x4x8
    r_pad = r0 + kw.kpu_map_rows(4, 4, C0)
    r1 = r_pad + kw.kpu_map_rows(4, 4, C0 * 16)
    r2 = r1 + kw.kpu_map_rows(4, 4, HIDDEN)
    conv0 = kw.KpuConv(in_w=8, in_h=8, pool_type=1, src=0, dst=r0, main_out=0,
                       **quant_conv(w0, b0, s_x, 0, s0, 0, 3, True))
    pad = kw.K210AddPadding(inp=0, kpu_out=r_pad, channels=C0 * 16)
    conv1 = kw.KpuConv(in_w=4, in_h=4, src=r_pad, dst=r1,
                       **quant_conv(w1.reshape(HIDDEN, C0 * 16, 1, 1), b1, s0, 0, s1, 0, 1, True))
    conv2 = kw.KpuConv(in_w=4, in_h=4, src=r1, dst=r2, main_out=256,
                       **quant_conv(w2.reshape(CLASSES, HIDDEN, 1, 1), b2, s1, 0, s2, z2, 1, False))
    unpad = kw.K210RemovePadding(inp=256, out=512, channels=CLASSES)
    deq = kw.Dequantize(inp=512, out=528, count=CLASSES, scale=float(np.float32(s2)),
                        bias=float(np.float32(-z2 * s2)))
    soft = kw.Softmax(inp=528, out=576, channels=CLASSES)
    model = kw.V3Model(layers=[conv0, pad, conv1, conv2, unpad, deq, soft], outputs=[(576, 4 * CLASSES)],
                       eight_bit=True)
    return model.to_bytes()


def emulator_predictions(kmodel, images):
    import _kpu
    m = _kpu.Model(kmodel)
    preds = []
    for img in images:
        m.set_input(0, np.ascontiguousarray(img, dtype=np.uint8).tobytes())
        m.run()
        data = m.output(0).data
        preds.append(int(np.argmax(np.frombuffer(data, dtype="<f4"))))
    return np.array(preds)


def make(out=None, quiet=False):
    """Train, quantise, write. Returns (kmodel bytes, float held-out accuracy, held-out images, labels)."""
    xtr, ytr, xte, yte = load_data()
    params = train(xtr, ytr)
    float_acc = float((forward(params, xte.astype(np.float64) / 255.0).argmax(1) == yte).mean())
    data = build_model(params, xtr)
    if out is not None:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "wb") as f:
            f.write(data)
    return data, float_acc, xte, yte


def write_frames(folder, count):
    """The first `count` held-out digits as 320x240 grayscale camera frames (the 8x8 digit scaled 30x, centred on
    black), named NNN_digitD.png so a demo can score its predictions."""
    from PIL import Image
    _, _, xte, yte = load_data()
    os.makedirs(folder, exist_ok=True)
    for i in range(min(count, len(yte))):
        big = np.kron(xte[i], np.ones((30, 30), np.uint8))
        frame = np.zeros((240, 320), np.uint8)
        frame[:, 40:280] = big
        Image.fromarray(frame, "L").save(os.path.join(folder, "%03d_digit%d.png" % (i, yte[i])))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="where to write the kmodel (default %(default)s)")
    ap.add_argument("--check", action="store_true", help="only compare with the existing file, do not write")
    ap.add_argument("--frames", help="write held-out digits as camera frames to this folder (no training) and stop")
    ap.add_argument("--count", type=int, default=12, help="how many frames --frames writes (default %(default)s)")
    args = ap.parse_args(argv)
    if args.frames:
        write_frames(args.frames, args.count)
        return 0
    data, float_acc, xte, yte = make(None)
    if args.check:
        same = os.path.exists(args.out) and open(args.out, "rb").read() == data
        print("%s: %s" % (args.out, "identical" if same else "DIFFERENT"))
        if not same:
            return 1
    else:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "wb") as f:
            f.write(data)
    acc = float((emulator_predictions(data, xte) == yte).mean())
    print("%s %s: %d bytes, sha256 %s" % ("checked" if args.check else "wrote", args.out, len(data),
                                         hashlib.sha256(data).hexdigest()[:16]))
    print("held-out digits: %d; float model accuracy %.4f; kmodel through the emulator %.4f" % (
        len(yte), float_acc, acc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
