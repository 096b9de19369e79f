# SPDX-License-Identifier: Apache-2.0
"""A host (PC) stand-in for MicroPython's `utime`: millisecond / microsecond ticks and sleeps.

Becomes the top-level `utime` module when `openkpu/board` is on `sys.path`. Ticks wrap like MicroPython's (2**30
period), so `ticks_diff` is the correct way to subtract them, as on the board.
"""
import time as _time

_PERIOD = 1 << 30
_T0 = _time.perf_counter()


def ticks_ms():
    return int((_time.perf_counter() - _T0) * 1000) % _PERIOD


def ticks_us():
    return int((_time.perf_counter() - _T0) * 1000000) % _PERIOD


def ticks_cpu():
    return ticks_us()


def ticks_add(ticks, delta):
    return (ticks + delta) % _PERIOD


def ticks_diff(end, start):
    return ((end - start + _PERIOD // 2) % _PERIOD) - _PERIOD // 2


def sleep(seconds):
    _time.sleep(seconds)


def sleep_ms(ms):
    _time.sleep(ms / 1000.0)


def sleep_us(us):
    _time.sleep(us / 1000000.0)


def time():
    return int(_time.time())


def localtime(secs=None):
    return _time.localtime(secs)[:8]


def mktime(t):
    return int(_time.mktime(tuple(t[:8]) + (-1,)))


class clock(object):  # noqa: N801 (MaixPy's time.clock)
    """MaixPy's `time.clock()`: tick() at frame start, fps() after."""

    def __init__(self):
        self._t = None
        self._dt = 0.0

    def tick(self):
        self._t = _time.perf_counter()

    def avg(self):
        return self._dt * 1000.0

    def fps(self):
        if self._t is not None:
            self._dt = _time.perf_counter() - self._t
        return 1.0 / self._dt if self._dt > 0 else 0.0
