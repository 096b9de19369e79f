// SPDX-License-Identifier: Apache-2.0
// K210 FPIOA (0x502B0000): one pad word per IO (function in ch_sel [7:0]) (section 6).
#ifndef OPENKPU_K210_FPIOA_H
#define OPENKPU_K210_FPIOA_H

#include <stdint.h>

#define FPIOA_BASE 0x502B0000u
#define FPIOA_NUM_IO 48u

// Pad words for the functions the port uses, as the SDK's function table yields them (k210-board.md section 6):
// RX: input enabled, Schmitt trigger; TX: output enabled, drive strength 0xF.
#define FPIOA_UARTHS_RX 0x00900012u
#define FPIOA_UARTHS_TX 0x00001F13u

#define BOARD_IO_UARTHS_RX 4u // the USB-serial chip on every Maix board
#define BOARD_IO_UARTHS_TX 5u

void fpioa_set(unsigned io, uint32_t pad_word);

#endif
