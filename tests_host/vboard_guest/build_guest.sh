#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Build one guest: build_guest.sh NAME OUTDIR  ->  OUTDIR/NAME.elf, OUTDIR/NAME.bin (what test_vboard.py does).
set -e
here=$(dirname "$0")
riscv64-unknown-elf-gcc -march=rv64imafdc_zicsr_zifencei -mabi=lp64d -mcmodel=medany -nostdlib -O1 \
    -ffreestanding -Wl,-T,"$here/link.ld" -Wl,--no-relax -Wl,--no-warn-rwx-segments -o "$2/$1.elf" "$here/crt.S" "$here/$1.c"
riscv64-unknown-elf-objcopy -O binary "$2/$1.elf" "$2/$1.bin"
