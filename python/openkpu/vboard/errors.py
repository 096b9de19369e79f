# SPDX-License-Identifier: Apache-2.0
"""Why the virtual board stopped. Device models never raise out of a Unicorn callback (that would abort the
instruction and re-execute it on restart); they record a `BoardFault` and the run loop stops at the slice end."""


class BoardError(Exception):
    """Base class for everything the virtual board reports."""


class BootError(BoardError):
    """The boot ROM model refused the flash image (bad header, bad SHA-256, encrypted image, ...)."""


class BoardFault(BoardError):
    """The guest did something the board cannot model or survive: unmodelled address, ebreak, KPU fault..."""


class BoardTimeout(BoardError):
    """run_until() reached its instruction or host-time limit before the expected output appeared."""
