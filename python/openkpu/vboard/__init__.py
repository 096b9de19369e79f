# SPDX-License-Identifier: Apache-2.0
"""`openkpu vboard`: a virtual Sipeed Maix (Kendryte K210) board on the Unicorn CPU emulator that boots the
project's K210 firmware. Needs the `vboard` extra (unicorn, pyserial). See board.py for the Board API and cli.py
for the command line."""
from .errors import BoardError, BoardFault, BoardTimeout, BootError

__all__ = ["Board", "BoardError", "BoardFault", "BoardTimeout", "BootError"]


def __getattr__(name):  # import unicorn only when the board is used
    if name == "Board":
        from .board import Board
        return Board
    raise AttributeError(name)
