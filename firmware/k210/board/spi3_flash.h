// SPDX-License-Identifier: Apache-2.0
// The Maix board's 16 MiB SPI NOR flash on SPI3 (DesignWare SSI 1.01a, dedicated pins, CS0), read by polling
// (k210-board.md section 7).
#ifndef OPENKPU_K210_SPI3_FLASH_H
#define OPENKPU_K210_SPI3_FLASH_H

#include <stddef.h>
#include <stdint.h>

#define SPI3_BASE 0x54000000u
#define SSI_CTRLR0 0x00u
#define SSI_CTRLR1 0x04u // frames to receive - 1 (16 bits: at most 65536 frames per transfer)
#define SSI_SSIENR 0x08u
#define SSI_SER 0x10u
#define SSI_BAUDR 0x14u
#define SSI_RXFLR 0x24u
#define SSI_SR 0x28u
#define SSI_SR_BUSY (1u << 0)
#define SSI_SR_TFE (1u << 2) // transmit FIFO empty
#define SSI_FIFO_DEPTH 32u
#define SSI_IMR 0x2Cu
#define SSI_DMACR 0x4Cu
#define SSI_DR 0x60u
#define SSI_SPI_CTRLR0 0xF4u
#define SSI_ENDIAN 0x118u // K210 addition

// SPI3's ctrlr0 layout (it differs from SPI0/1): dfs [4:0], tmod [11:10], frame format [23:22]
#define SPI3_CTRLR0_DFS_8 (7u << 0)
#define SPI3_CTRLR0_TMOD_TX (1u << 10)     // transmit only
#define SPI3_CTRLR0_TMOD_EEPROM (3u << 10) // send the command frames, then receive ctrlr1 + 1 frames
#define SPI3_MAX_FRAMES 65536u
#define SPI3_CS0 (1u << 0)

#define FLASH_CMD_READ 0x03u // standard read, no dummy byte
#define FLASH_CMD_READ_ID 0x90u // manufacturer, device (after 3 address bytes of 0)
#define FLASH_CMD_JEDEC_ID 0x9Fu // manufacturer, memory type, capacity
#define FLASH_CMD_WRITE_ENABLE 0x06u
#define FLASH_CMD_READ_STATUS 0x05u // bit 0: busy programming or erasing
#define FLASH_CMD_PAGE_PROGRAM 0x02u
#define FLASH_CMD_SECTOR_ERASE 0x20u // 4 KiB
#define FLASH_PAGE_SIZE 256u
#define FLASH_SECTOR_SIZE 4096u
#define FLASH_SCLK_MAX_HZ 25000000u // well inside every 0x03-read limit (W25Q128: 50 MHz)
#define FLASH_DEFAULT_SIZE (16u * 1024u * 1024u) // every Maix board

void spi3_flash_init(uint32_t ssi_hz);
// 0 on success, -1 when the controller stops delivering bytes
int spi3_flash_read(uint32_t addr, uint8_t *buf, size_t len);
int spi3_flash_read_id(uint8_t id[2]);
// Erase the 4 KiB sector holding addr (bytes become 0xFF); program bytes into erased flash (any length, any
// alignment: split at pages). 0 on success, -1 when the controller or the chip stops answering.
int spi3_flash_erase_sector(uint32_t addr);
int spi3_flash_program(uint32_t addr, const uint8_t *buf, size_t len);
int spi3_flash_jedec_id(uint8_t id[3]);
uint32_t spi3_flash_size(void); // from the 0x90 device id; 16 MiB if it is not a known code
uint32_t spi3_flash_sclk_hz(void);

#endif
