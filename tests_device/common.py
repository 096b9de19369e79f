# SPDX-License-Identifier: Apache-2.0
# The helpers every tests_device script uses. Not a module: each runner prepends this file to the script it runs
# (after its WORKDIR / TESTDATA lines), so a script stays one paste into a board's raw REPL: tests_host's runners do,
# and scripts/serial_runner.py with --prelude-file tests_device/common.py.
import _kpu

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL", what)


def fnv(b):
    # FNV-1a over the bytes: a short, exact fingerprint of a buffer
    h = 0x811C9DC5
    for x in b:
        h = ((h ^ x) * 0x01000193) & 0xFFFFFFFF
    return "%08x" % h


def show_exc(tag, fn, upto=None):
    # the exception's type and arguments (the exception is returned; fn's result when it raised none); upto: print
    # the message only up to this text (the rest quotes the interpreter's own OSError wording)
    try:
        r = fn()
        print(tag, "no exception")
        return r
    except Exception as e:
        msg = "|".join([str(a) for a in e.args])
        if upto is not None and upto in msg:
            msg = msg[:msg.index(upto) + len(upto)]
        print(tag, type(e).__name__, msg)
        return e


def memory_items(mem):
    """The memory report as sorted items; backend_scratch is the emulator's working memory (a K210's KPU needs
    none), so it prints on an [emulator] line of its own."""
    if _kpu.BACKEND == "emulator":
        print("[emulator] backend_scratch", mem["backend_scratch"])
    return sorted((k, v) for k, v in mem.items() if k != "backend_scratch")


def read(path):
    f = open(path, "rb")
    try:
        return f.read()
    finally:
        f.close()


def write(path, data):
    f = open(path, "wb")
    try:
        f.write(data)
    finally:
        f.close()


def exists(path):
    try:
        open(path, "rb").close()
        return True
    except OSError:
        return False
