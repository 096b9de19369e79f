# SPDX-License-Identifier: Apache-2.0
"""`openkpu infer MODEL --dataset DIR --out DIR`: run a kmodel over a folder of inputs, as nncase's `ncc infer` does.

Each file of DIR (sorted by name; sub-folders are not read) is one input:
- an image (.bmp .jpg .jpeg .png .gif .pgm .ppm .tif .tiff .webp): converted to the model's channels (RGB or
  grayscale) and resized (bilinear) to its input size, then fed as the planar u8 bytes `pix_to_ai()` gives;
- a `.npy` array (needs NumPy): as `kpu.forward` takes arrays (u8 H x W x C or C x H x W, a batch of one; float32
  for float-input models);
- a `.bin` file: the raw input, exactly the model's input size in bytes (planar u8 C x H x W, or float32).
Other files are skipped (listed in the summary). For each input and each model output k, `OUT/<input name>.out<k>.npy`
is written: float32 for float outputs, uint8 for raw KPU outputs, shaped (ch, h, w) (a flat vector: (n,)). Writing
needs no NumPy. The last line is a summary; exit status 0 when every input ran, 1 when some failed, 2 on a usage
error (no model, no inputs).
"""
import argparse
import os
import struct
import sys
import time

PREFIX = "[openkpu]"
IMAGE_EXT = (".bmp", ".jpg", ".jpeg", ".png", ".gif", ".pgm", ".ppm", ".tif", ".tiff", ".webp")


def write_npy(path, data, dtype, shape):
    """Write raw little-endian `data` as a .npy file (format 1.0) of `dtype` ('<f4' or '|u1') and `shape`."""
    shape_txt = "(%s)" % "".join("%d, " % d for d in shape) if len(shape) == 1 else "(%s)" % ", ".join(
        str(d) for d in shape)
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype, shape_txt)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(data)


def _input_desc(inp):
    return inp.c, inp.h, inp.w, inp.bytes, inp.typecode


def load_input(path, inp):
    """What kpu.forward takes for the file at `path`, for the model input `inp` (see the module docstring)."""
    c, h, w, nbytes, tc = _input_desc(inp)
    low = path.lower()
    if low.endswith(IMAGE_EXT):
        from PIL import Image as _PIL
        try:
            pil = _PIL.open(path)
            pil.load()
        except (OSError, SyntaxError, ValueError) as e:
            raise ValueError("not an image Pillow can read (%s)" % e)
        if tc != "B" and tc != "u8":
            pass  # kpu.forward says what a float-input model needs
        pil = pil.convert("L" if c == 1 else "RGB")
        if pil.size != (w, h):
            pil = pil.resize((w, h), getattr(_PIL, "Resampling", _PIL).BILINEAR)
        if c == 1:
            return pil.tobytes()
        return b"".join(band.tobytes() for band in pil.split())
    if low.endswith(".npy"):
        try:
            import numpy as np
        except ImportError:
            raise ValueError("reading .npy inputs needs NumPy: pip install numpy (or give .bin / image files)")
        return np.load(path, allow_pickle=False)
    if low.endswith(".bin"):
        with open(path, "rb") as f:
            data = f.read()
        if len(data) != nbytes:
            raise ValueError("a .bin input is the model's raw input, %d bytes (%dx%dx%d %s), this file has %d"
                             % (nbytes, w, h, c, "u8" if tc == "B" else "float32", len(data)))
        return data
    return None


def output_files(kpu, net, stem, out_dir):
    """Write every output of the last run as OUT/<stem>.out<k>.npy; returns the paths."""
    paths = []
    for k in range(net.net_arg().output_count()):
        fm = kpu.get_output(net, k)
        data = fm.data()
        if fm.typecode() == "f":
            dtype, count = "<f4", len(data) // 4
        else:
            dtype, count = "|u1", len(data)
        shape = (fm.ch(), fm.h(), fm.w()) if fm.ch() * fm.h() * fm.w() == count and (fm.h() > 1 or fm.ch() > 1) \
            else (count,)
        path = os.path.join(out_dir, "%s.out%d.npy" % (stem, k))
        write_npy(path, bytes(data), dtype, shape)
        paths.append(path)
    return paths


def infer(model, dataset, out_dir, out=None, err=None):
    """Run `model` over the files of `dataset`, writing .npy outputs to `out_dir`. Returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    import KPU as kpu
    if not os.path.isfile(model):
        print("%s infer: model not found: %s" % (PREFIX, model), file=err)
        return 2
    if not os.path.isdir(dataset):
        print("%s infer: --dataset must be a folder of inputs (images, .npy, .bin), not %s" % (PREFIX, dataset),
              file=err)
        return 2
    names = sorted(n for n in os.listdir(dataset) if os.path.isfile(os.path.join(dataset, n)))
    if not names:
        print("%s infer: the dataset folder %s is empty" % (PREFIX, dataset), file=err)
        return 2
    try:
        net = kpu.load(model)
    except (ValueError, OSError) as e:
        print("%s infer: %s: %s" % (PREFIX, model, e), file=err)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    inp = net.net_arg().inputs()[0]
    t0 = time.perf_counter()
    ran, written, skipped, failed = 0, 0, [], []
    for name in names:
        path = os.path.join(dataset, name)
        try:
            data = load_input(path, inp)
            if data is None:
                skipped.append(name)
                continue
            kpu.forward(net, data)
        except (ValueError, OSError, TypeError) as e:
            failed.append(name)
            print("%s infer: %s: %s" % (PREFIX, path, e), file=err)
            continue
        stem = os.path.splitext(name)[0]
        written += len(output_files(kpu, net, stem, out_dir))
        ran += 1
    kpu.deinit(net)
    c, h, w, nbytes, tc = _input_desc(inp)
    print("%s infer: %d input(s) run through %s (input %dx%dx%d), %d .npy file(s) written to %s, %d skipped%s, "
          "%d failed; %.2f s" % (PREFIX, ran, os.path.basename(model), w, h, c, written, out_dir, len(skipped),
                                 (" (%s)" % ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
                                 if skipped else "", len(failed), time.perf_counter() - t0), file=out)
    if ran == 0 and not failed:
        print("%s infer: no input in %s had a known type: images (%s), .npy or .bin"
              % (PREFIX, dataset, " ".join(IMAGE_EXT)), file=err)
        return 2
    return 1 if failed else 0


def main(argv=None, prog="openkpu infer"):
    parser = argparse.ArgumentParser(prog=prog, description="Run a kmodel over a folder of inputs and write each "
                                     "output as .npy (like nncase's ncc infer).")
    parser.add_argument("model", help="the .kmodel")
    parser.add_argument("--dataset", required=True, help="folder of inputs: images, .npy arrays, raw .bin files")
    parser.add_argument("--out", required=True, help="folder for the outputs: <input name>.out<k>.npy")
    args = parser.parse_args(argv)
    return infer(args.model, args.dataset, args.out)


if __name__ == "__main__":
    sys.exit(main())
