// SPDX-License-Identifier: Apache-2.0
// SPI3 NOR flash reads: EEPROM transfer mode with 8-bit frames (one byte per FIFO entry, so no byte-order
// question), the command and address pushed before CS is asserted, then the receive FIFO drained by polling.
#include "mmio.h"
#include "spi3_flash.h"

#define REG(off) (SPI3_BASE + (off))
// rxflr read this many times in a row without a byte: the controller is stuck (about a second on the chip)
#define SPI3_STALL_LIMIT 20000000u

static uint32_t sclk_hz;

void spi3_flash_init(uint32_t ssi_hz) {
    // baudr: an even divider >= 2 giving at most FLASH_SCLK_MAX_HZ
    uint32_t div = (ssi_hz + FLASH_SCLK_MAX_HZ - 1u) / FLASH_SCLK_MAX_HZ;
    div = (div + 1u) & ~1u;
    if (div < 2u) {
        div = 2u;
    }
    sclk_hz = ssi_hz / div;
    mmio_write32(REG(SSI_SSIENR), 0);
    mmio_write32(REG(SSI_SER), 0);
    mmio_write32(REG(SSI_CTRLR0), SPI3_CTRLR0_DFS_8 | SPI3_CTRLR0_TMOD_EEPROM); // mode 0, standard frame format
    mmio_write32(REG(SSI_BAUDR), div);
    mmio_write32(REG(SSI_IMR), 0);
    mmio_write32(REG(SSI_DMACR), 0);
    mmio_write32(REG(SSI_SPI_CTRLR0), 0);
    mmio_write32(REG(SSI_ENDIAN), 0);
}

uint32_t spi3_flash_sclk_hz(void) {
    return sclk_hz;
}

// One EEPROM-mode transfer: cmd_len command bytes out, n (1..65536) bytes in.
static int eeprom_transfer(const uint8_t *cmd, size_t cmd_len, uint8_t *buf, size_t n) {
    mmio_write32(REG(SSI_SSIENR), 0);
    mmio_write32(REG(SSI_CTRLR1), (uint32_t)(n - 1u));
    mmio_write32(REG(SSI_SSIENR), 1);
    for (size_t i = 0; i < cmd_len; i++) {
        mmio_write32(REG(SSI_DR), cmd[i]);
    }
    // CS only after the whole command is queued, so the command phase cannot end early
    mmio_write32(REG(SSI_SER), SPI3_CS0);
    int status = 0;
    uint32_t idle = 0;
    while (n > 0) {
        uint32_t avail = mmio_read32(REG(SSI_RXFLR));
        if (avail == 0) {
            if (++idle == SPI3_STALL_LIMIT) {
                status = -1;
                break;
            }
            continue;
        }
        idle = 0;
        if (avail > n) {
            avail = (uint32_t)n;
        }
        n -= avail;
        while (avail--) {
            *buf++ = (uint8_t)mmio_read32(REG(SSI_DR));
        }
    }
    mmio_write32(REG(SSI_SER), 0);
    mmio_write32(REG(SSI_SSIENR), 0);
    return status;
}

int spi3_flash_read(uint32_t addr, uint8_t *buf, size_t len) {
    while (len > 0) {
        size_t n = len < SPI3_MAX_FRAMES ? len : SPI3_MAX_FRAMES;
        const uint8_t cmd[4] = {FLASH_CMD_READ, (uint8_t)(addr >> 16), (uint8_t)(addr >> 8), (uint8_t)addr};
        if (eeprom_transfer(cmd, sizeof(cmd), buf, n) != 0) {
            return -1;
        }
        addr += (uint32_t)n;
        buf += n;
        len -= n;
    }
    return 0;
}

int spi3_flash_read_id(uint8_t id[2]) {
    const uint8_t cmd[4] = {FLASH_CMD_READ_ID, 0, 0, 0};
    return eeprom_transfer(cmd, sizeof(cmd), id, 2);
}

int spi3_flash_jedec_id(uint8_t id[3]) {
    const uint8_t cmd[1] = {FLASH_CMD_JEDEC_ID};
    return eeprom_transfer(cmd, sizeof(cmd), id, 3);
}

uint32_t spi3_flash_size(void) {
    uint8_t id[2];
    // Winbond / GigaDevice 0x90 device codes: 0x17 = 128 Mbit = 16 MiB, 0x16 = 8 MiB, ... (size = 2 << code);
    // 0x03 reads take 24-bit addresses, so 16 MiB is the most this driver reaches
    if (spi3_flash_read_id(id) == 0 && id[1] >= 0x11u && id[1] <= 0x17u) {
        return 2u << id[1];
    }
    return FLASH_DEFAULT_SIZE;
}
