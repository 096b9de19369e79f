#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fetch MicroPython's core source (py/, shared/, tools/ of v1.23.0) from the PyPI sdist of mpy-cross-v6-3, check
# its sha256 and unpack it. MicroPython's source is never committed: it lives under build/.
#
#   scripts/mpy_fetch.sh DEST SHA256     -> DEST/mpy_cross_v6_3-1.1.1/micropython
set -eu
DEST=${1:?usage: mpy_fetch.sh DEST SHA256}
SHA=${2:?usage: mpy_fetch.sh DEST SHA256}
DIR=$("$(dirname "$0")/sdist_fetch.sh" mpy-cross-v6-3 1.1.1 "$SHA" "$DEST")
echo "$DIR/micropython"
