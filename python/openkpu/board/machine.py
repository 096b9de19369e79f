# SPDX-License-Identifier: Apache-2.0
"""A PC stand-in for MicroPython's `machine` on a Maix board: what MaixPy's KPU examples import from it.

`machine.reset()` / `soft_reset()` end the script (as the board would restart it) by raising SystemExit;
`freq()`, `unique_id()`, `idle()`; `UART` (writes go to stdout when `host_echo` is set, reads return None),
`Timer` (callbacks are not called), `I2C` (`scan()` finds nothing), `PWM`, `WDT` (no effect). Nothing touches
hardware.
"""
import sys


def reset():
    raise SystemExit("machine.reset()")


soft_reset = reset


def freq():
    return 400000000


def unique_id():
    return b"openkpu-host\x00\x00\x00\x00"


def idle():
    return None


class UART(object):
    UART1, UART2, UART3, UARTHS = 1, 2, 3, 0
    host_echo = False

    def __init__(self, uart=1, baudrate=115200, bits=8, parity=None, stop=1, timeout=1000, read_buf_len=4096,
                 **kwargs):
        self.id = uart
        self.baudrate = baudrate

    def init(self, *args, **kwargs):
        return None

    def write(self, data):
        if UART.host_echo:
            sys.stdout.write("[uart%s] %r\n" % (self.id, data))
        return len(data)

    def read(self, n=-1):
        return None

    def readline(self):
        return None

    def any(self):
        return 0

    def deinit(self):
        return None


class Timer(object):
    TIMER0, TIMER1, TIMER2 = 0, 1, 2
    CHANNEL0, CHANNEL1, CHANNEL2, CHANNEL3 = 0, 1, 2, 3
    MODE_ONE_SHOT, MODE_PERIODIC, MODE_PWM = 0, 1, 2
    UNIT_S, UNIT_MS, UNIT_US, UNIT_NS = 0, 1, 2, 3

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):  # start(), stop(), callback(), period(), ...: accepted, no effect
        return lambda *a, **k: None


class I2C(object):
    I2C0, I2C1, I2C2 = 0, 1, 2
    MODE_MASTER, MODE_SLAVE = 0, 1

    def __init__(self, *args, **kwargs):
        pass

    def scan(self):
        return []

    def __getattr__(self, name):
        return lambda *a, **k: None


class PWM(object):
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None


class WDT(object):
    def __init__(self, *args, **kwargs):
        pass

    def feed(self):
        return None

    def stop(self):
        return None
