# SPDX-License-Identifier: Apache-2.0
"""A PC stand-in for MaixPy's `board` module: `from board import board_info` gives the pin numbers of a Maix board.

The numbers are those of the Maix Dock / Maix Bit (MaixPy's default board config): the BOOT key on pin 16, the RGB
LED on pins 12 (green), 13 (red), 14 (blue). On a PC they only name pins for `fm.register` and `GPIO`.
"""


class _BoardInfo(object):
    BOOT_KEY = 16
    LED_R = 13
    LED_G = 12
    LED_B = 14
    LED_W = 32
    MIC0_WS = 19
    MIC0_DATA = 20
    MIC0_BCK = 18
    SPK_WS = 33
    SPK_DATA = 34
    SPK_BCK = 35

    def __init__(self):
        for i in range(48):
            setattr(self, "PIN%d" % i, i)

    def pin_map(self, pin=None):
        names = sorted(n for n in dir(self) if n.isupper())
        return dict((n, getattr(self, n)) for n in names)


board_info = _BoardInfo()
