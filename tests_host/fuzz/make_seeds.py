# SPDX-License-Identifier: Apache-2.0
"""Seed corpora for the fuzz targets, generated at fuzz time into a build directory (never committed):

- the real models in ../shared/testdata (when present) and examples/models;
- every model the writers (openkpu.kmodel_writer, kmodel_writer_v4) build in the v3/v4 layer tests: those tests run
  in-process with _kpu.Model wrapped to record each model it is given;
- for fuzz_post: a few YOLO outputs and face vectors.

usage: python make_seeds.py OUT_DIR   (creates OUT_DIR/fuzz_v3, OUT_DIR/fuzz_v4, OUT_DIR/fuzz_post)
"""
import hashlib
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = ROOT.parent / "shared" / "testdata"
MAX_SEED = 4 << 20


def save(out: pathlib.Path, data: bytes) -> None:
    if not data or len(data) > MAX_SEED:
        return
    target = "fuzz_v4" if data[:4] == b"LDMK" else "fuzz_v3" if data[:4] == b"\x03\x00\x00\x00" else None
    if target is None:
        return
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def writer_models(out: pathlib.Path) -> None:
    import pytest
    import _kpu

    real = _kpu.Model

    def recording(data, *a, **kw):
        try:
            save(out, bytes(data))
        except Exception:
            pass
        return real(data, *a, **kw)

    _kpu.Model = recording
    try:
        tests = [str(ROOT / "tests_host" / t) for t in ("test_v3_cpu_layers.py", "test_v4_ops.py", "test_malformed.py")]
        pytest.main(["-q", "-x", "-p", "no:cacheprovider", "-k", "not slow", *tests])
    finally:
        _kpu.Model = real


def post_seeds(out: pathlib.Path) -> None:
    d = out / "fuzz_post"
    d.mkdir(parents=True, exist_ok=True)
    for i, (w, h, anchors, classes) in enumerate([(7, 7, 5, 20), (13, 13, 5, 1), (4, 3, 2, 3)]):
        ch = anchors * (5 + classes)
        head = bytes([0, (w - 1), (h - 1), ch - 1 if ch <= 256 else 255, anchors + 1, 128, 100]) + bytes(10)
        vals = b"".join(struct.pack("<f", ((k * 7919) % 200 - 100) / 25.0) for k in range(w * h * min(ch, 64)))
        (d / f"yolo{i}").write_bytes(head + vals)
    (d / "face0").write_bytes(b"\x01" + b"".join(struct.pack("<f", (k % 9 - 4) / 16.0) for k in range(196)))
    (d / "face1").write_bytes(b"\x01" + struct.pack("<4f", 0.25, -0.25, float("nan"), float("inf")))


def main() -> int:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for f in list(TESTDATA.rglob("*.kmodel")) + list((ROOT / "examples" / "models").glob("*.kmodel")):
        save(out, f.read_bytes())
    post_seeds(out)
    writer_models(out)
    for t in ("fuzz_v3", "fuzz_v4", "fuzz_post"):
        print(t, len(list((out / t).glob("*"))), "seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
