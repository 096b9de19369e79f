# SPDX-License-Identifier: Apache-2.0
"""A PC stand-in for MaixPy's `fpioa_manager`: `fm.register(pin, fm.fpioa.FUNCTION)` records the pin mapping.

MaixPy scripts say `from fpioa_manager import fm` (older ones `from fpioa_manager import *`) and map board pins to
functions before using GPIO or UART. Nothing here touches hardware; `fm.get_pin_by_function(f)` and
`fm.get_gpio_used()` report what was registered.
"""
from Maix import FPIOA

__all__ = ["fm", "FPIOA"]


class _FpioaManager(object):
    def __init__(self):
        self.fpioa = FPIOA()
        self._pins = {}  # pin -> function

    def register(self, pin, function, force=True):
        pin, function = int(pin), int(function)
        if not 0 <= pin < 48:
            raise ValueError("fm.register: the K210 has pins 0..47, got %d" % pin)
        if not force:
            for p, f in self._pins.items():
                if f == function and p != pin:
                    raise Exception("function %d is already registered to pin %d (pass force=True to move it)"
                                    % (function, p))
        self._pins[pin] = function
        self.fpioa.set_function(pin, function)
        return None

    def unregister(self, pin, function=None):
        self._pins.pop(int(pin), None)
        return None

    def get_pin_by_function(self, function):
        for p, f in self._pins.items():
            if f == int(function):
                return p
        return None

    def get_gpio_used(self):
        return sorted(self._pins.items())

    def help(self, *args, **kwargs):
        return None


fm = _FpioaManager()
