# SPDX-License-Identifier: Apache-2.0
"""openkpu's own demo model (scripts/train_digits.py -> examples/models/digits.kmodel).

- Regenerating it gives the identical bytes (fixed seeds, fixed split, pinned BLAS kernels): run in a subprocess so
  the script's BLAS settings apply before NumPy loads.
- Through the emulator, the committed kmodel classifies the 450 held-out digits with accuracy >= 0.97. Measured:
  0.9822 (442 / 450), the same as the float model, so quantisation costs nothing here. The floor leaves room for
  a few flips if a disputed rounding default changes (kpu-reference section 8), while a broken KPU path (offset
  terms, BN / activation tables, KPU RAM layout, add/remove padding) drops far below it.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "models" / "digits.kmodel"
SCRIPT = ROOT / "scripts" / "train_digits.py"

pytest.importorskip("sklearn", reason="scikit-learn (the digits data set) is not installed: pip install scikit-learn")


def load_script():
    import importlib.util
    spec = importlib.util.spec_from_file_location("train_digits", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_regenerating_gives_identical_bytes():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(MODEL)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "identical" in proc.stdout


def test_held_out_accuracy_through_emulator():
    import _kpu
    td = load_script()
    _xtr, _ytr, xte, yte = td.load_data()
    assert len(yte) == 450
    data = MODEL.read_bytes()
    m = _kpu.Model(data)
    assert m.version() == 3
    pred = td.emulator_predictions(data, xte)
    acc = float((pred == yte).mean())
    assert acc >= 0.97, acc


def test_through_kpu_api():
    import KPU as kpu
    from openkpu.board import image
    td = load_script()
    _xtr, _ytr, xte, yte = td.load_data()
    task = kpu.load(str(MODEL))
    try:
        info = kpu.netinfo(task)
        assert len(info) == 7
        correct = 0
        for x, y in zip(xte[:50], yte[:50]):
            img = image.Image(width=8, height=8, format=image.GRAYSCALE, data=x.tobytes())
            probs = kpu.forward(task, img)[:]
            assert abs(sum(probs) - 1.0) < 1e-4
            correct += int(np.argmax(probs)) == y
        assert correct >= 47
        # the first layer's feature maps through set_layers + fmap
        kpu.set_layers(task, 1)
        fm = kpu.forward(task, image.Image(width=8, height=8, format=image.GRAYSCALE, data=xte[0].tobytes()))
        assert (fm.w(), fm.h(), fm.ch(), fm.typecode()) == (4, 4, 8, "B")
        assert kpu.fmap(fm, 0).width() == 4
    finally:
        kpu.deinit(task)
