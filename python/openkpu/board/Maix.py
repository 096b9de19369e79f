# SPDX-License-Identifier: Apache-2.0
"""A host (PC) stand-in for MaixPy's `Maix` module: the board-control calls MaixPy examples make, as no-ops.

Becomes the top-level `Maix` module when `openkpu/board` is on `sys.path`. `GPIO` pins remember their value,
`FPIOA.set_function` records the mapping, `freq` reports the K210's defaults, `utils.gc_heap_size` /
`utils.heap_free` report plausible numbers. Nothing here touches hardware; `I2S`, `FFT`, `Audio` are not provided.
"""


class GPIO(object):
    GPIO0, GPIO1, GPIO2, GPIO3, GPIO4, GPIO5, GPIO6, GPIO7 = range(8)
    GPIOHS0 = 8
    IN, OUT = 0, 3
    PULL_NONE, PULL_DOWN, PULL_UP = 0, 1, 2
    IRQ_NONE, IRQ_RISING, IRQ_FALLING, IRQ_BOTH = 0, 1, 2, 3
    WAKEUP_NOT_SUPPORT = 0

    def __init__(self, gpio_id, direction=IN, pull=PULL_NONE, value=0):
        self._id = gpio_id
        self._dir = direction
        self._pull = pull
        self._value = 1 if pull == GPIO.PULL_UP else int(value)

    def value(self, v=None):
        if v is None:
            return self._value
        self._value = 1 if v else 0
        return None

    def mode(self, direction=None):
        if direction is not None:
            self._dir = direction
        return self._dir

    def irq(self, *args, **kwargs):
        return None

    def disirq(self):
        return None


for _i in range(32):
    setattr(GPIO, "GPIOHS%d" % _i, 8 + _i)
del _i


class FPIOA(object):
    """Pin function mapping: recorded, no effect."""
    _map = {}

    def __init__(self):
        pass

    def set_function(self, pin, func, *args, **kwargs):
        FPIOA._map[int(pin)] = func
        return None

    def get_Pin_num(self, func):  # noqa: N802 (MaixPy's name)
        for pin, f in FPIOA._map.items():
            if f == func:
                return pin
        return None

    def help(self, *args, **kwargs):
        return None


# FPIOA function numbers used by the examples (as in the K210 SDK's fpioa.h)
for _i in range(32):
    setattr(FPIOA, "GPIOHS%d" % _i, 24 + _i)
for _i in range(8):
    setattr(FPIOA, "GPIO%d" % _i, 56 + _i)
del _i
FPIOA.UART1_TX, FPIOA.UART1_RX = 18, 19
FPIOA.UART2_TX, FPIOA.UART2_RX = 20, 21


class freq(object):  # noqa: N801 (MaixPy's name)
    _cpu = 400
    _kpu = 400

    @staticmethod
    def get():
        return (freq._cpu, freq._kpu)

    @staticmethod
    def get_cpu():
        return freq._cpu

    @staticmethod
    def get_kpu():
        return freq._kpu

    @staticmethod
    def set(cpu=None, pll1=None, kpu_div=None, pll2=None):
        if cpu:
            freq._cpu = int(cpu)
        if pll1 and kpu_div:
            freq._kpu = int(pll1) // int(kpu_div)
        return None


class utils(object):  # noqa: N801
    _gc_heap = 512 * 1024

    @staticmethod
    def gc_heap_size(size=None):
        if size is None:
            return utils._gc_heap
        utils._gc_heap = int(size)
        return None

    @staticmethod
    def heap_free():
        return 4 * 1024 * 1024


def reset():
    return None
