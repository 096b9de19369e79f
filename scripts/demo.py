#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The demo behind `make demo`: a MaixPy board script run unchanged on the PC.

1. With the project's own digits model (examples/models/digits.kmodel, made by scripts/train_digits.py): the
   board-style script examples/digits_demo.py runs through the runner (`python -m openkpu run`) on held-out 8x8
   digits, printing each prediction and writing what the LCD would show to build/demo/lcd.
2. Otherwise, or in addition when ../shared/testdata is there: the 20-class YOLOv2 model finds objects on dog.bmp;
   the annotated image goes to build/demo/yolo_dog.png.
"""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))
OUT = ROOT / "build" / "demo"

VOC = ["aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable", "dog",
       "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor"]


def digits_demo():
    script = ROOT / "examples" / "digits_demo.py"
    model = ROOT / "examples" / "models" / "digits.kmodel"
    if not (script.exists() and model.exists()):
        return False
    frames = OUT / "digit_frames"
    subprocess.check_call([sys.executable, str(ROOT / "scripts" / "train_digits.py"), "--frames", str(frames),
                           "--count", "12"])
    cmd = [sys.executable, "-m", "openkpu", "run", str(script), "--frames", str(frames), "--lcd-out",
           str(OUT / "lcd"), "--max-frames", "12"]
    print("$", " ".join(cmd))
    out = subprocess.run(cmd, cwd=str(ROOT / "examples"), stdout=subprocess.PIPE, text=True, check=True).stdout
    print(out, end="")
    # score the board script's printed predictions against the labels in the frame names
    names = sorted(p.name for p in frames.glob("*.png"))
    preds = [int(line.split()[1]) for line in out.splitlines() if line.startswith("digit:")]
    right = sum(1 for name, p in zip(names, preds) if name.endswith("digit%d.png" % p))
    print("board script: %d/%d held-out digits right; LCD frames (annotated) in %s" % (right, len(preds),
                                                                                     OUT / "lcd"))
    # the whole held-out set through the emulator (scripts/train_digits.py --check retrains and compares bytes)
    subprocess.check_call([sys.executable, str(ROOT / "scripts" / "train_digits.py"), "--check"])
    return True


def yolo_demo():
    model = TESTDATA / "yolo2_voc20_v3_nncase_rc5" / "yolo.kmodel"
    photo = TESTDATA / "yolo2_voc20_v3_nncase_rc5" / "dog.bmp"
    if not model.exists():
        print("(YOLO demo skipped: %s not found)" % model)
        return False
    import KPU as kpu
    from openkpu.board import image

    task = kpu.load(str(model))
    kpu.init_yolo2(task, 0.5, 0.2, 5, (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52))
    img = image.Image(str(photo))
    for obj in kpu.run_yolo2(task, img) or []:
        print("YOLOv2 on dog.bmp: %-10s %.3f at %s" % (VOC[obj.classid()], obj.value(), obj.rect()))
        img.draw_rectangle(obj.rect(), color=(255, 0, 0), thickness=2)
    OUT.mkdir(parents=True, exist_ok=True)
    img.save(str(OUT / "yolo_dog.png"))
    print("annotated image:", OUT / "yolo_dog.png")
    kpu.memtest()
    kpu.deinit(task)
    return True


def main():
    ran = digits_demo()
    ran = yolo_demo() or ran
    if not ran:
        print("nothing to run: neither examples/models/digits.kmodel nor ../shared/testdata was found")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
