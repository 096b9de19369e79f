// SPDX-License-Identifier: Apache-2.0
// SPI3 NOR flash reads: EEPROM transfer mode with 8-bit frames (one byte per FIFO entry, so no byte-order
// question), the command and address pushed before CS is asserted, then the receive FIFO drained by polling.
// Writes (for the /flash filesystem): transmit-only bursts that fit the 32-entry FIFO. The SSI raises CS when its
// transmit FIFO runs empty, so a command is only safe if it is wholly queued before CS is asserted: a page program
// goes out as several programs of at most 28 data bytes, each a single burst.
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
    mmio_write32(REG(SSI_CTRLR0), SPI3_CTRLR0_DFS_8 | SPI3_CTRLR0_TMOD_EEPROM);
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

// One CS-low burst of at most SSI_FIFO_DEPTH bytes, transmit only; waits until the last bit is out.
static int tx_burst(const uint8_t *frames, size_t n) {
    mmio_write32(REG(SSI_SSIENR), 0);
    mmio_write32(REG(SSI_CTRLR0), SPI3_CTRLR0_DFS_8 | SPI3_CTRLR0_TMOD_TX);
    mmio_write32(REG(SSI_SSIENR), 1);
    for (size_t i = 0; i < n; i++) {
        mmio_write32(REG(SSI_DR), frames[i]);
    }
    mmio_write32(REG(SSI_SER), SPI3_CS0);
    int status = -1;
    for (uint32_t polls = 0; polls < SPI3_STALL_LIMIT; polls++) {
        uint32_t sr = mmio_read32(REG(SSI_SR));
        if ((sr & SSI_SR_TFE) && !(sr & SSI_SR_BUSY)) {
            status = 0;
            break;
        }
    }
    mmio_write32(REG(SSI_SER), 0);
    mmio_write32(REG(SSI_SSIENR), 0);
    return status;
}

// Wait for the end of a program or erase (W25Q128: page 3 ms, sector 400 ms at most).
static int wait_ready(void) {
    for (uint32_t polls = 0; polls < SPI3_STALL_LIMIT; polls++) {
        const uint8_t cmd[1] = {FLASH_CMD_READ_STATUS};
        uint8_t st;
        if (eeprom_transfer(cmd, sizeof(cmd), &st, 1) != 0) {
            return -1;
        }
        if (!(st & 1u)) {
            return 0;
        }
    }
    return -1;
}

static int write_enable(void) {
    const uint8_t cmd[1] = {FLASH_CMD_WRITE_ENABLE};
    return tx_burst(cmd, sizeof(cmd));
}

int spi3_flash_erase_sector(uint32_t addr) {
    const uint8_t cmd[4] = {FLASH_CMD_SECTOR_ERASE, (uint8_t)(addr >> 16), (uint8_t)(addr >> 8), (uint8_t)addr};
    if (write_enable() != 0 || tx_burst(cmd, sizeof(cmd)) != 0) {
        return -1;
    }
    return wait_ready();
}

int spi3_flash_program(uint32_t addr, const uint8_t *buf, size_t len) {
    uint8_t frames[SSI_FIFO_DEPTH];
    while (len > 0) {
        size_t n = SSI_FIFO_DEPTH - 4u;
        size_t to_page_end = FLASH_PAGE_SIZE - (addr % FLASH_PAGE_SIZE);
        if (n > to_page_end) {
            n = to_page_end;
        }
        if (n > len) {
            n = len;
        }
        frames[0] = FLASH_CMD_PAGE_PROGRAM;
        frames[1] = (uint8_t)(addr >> 16);
        frames[2] = (uint8_t)(addr >> 8);
        frames[3] = (uint8_t)addr;
        for (size_t i = 0; i < n; i++) {
            frames[4 + i] = buf[i];
        }
        if (write_enable() != 0 || tx_burst(frames, 4u + n) != 0 || wait_ready() != 0) {
            return -1;
        }
        addr += (uint32_t)n;
        buf += n;
        len -= n;
    }
    return 0;
}
