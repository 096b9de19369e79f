#!/bin/sh
# Fetch MicroPython's core source (py/, shared/, tools/ of v1.23.0) from the PyPI sdist of mpy-cross-v6-3, check
# its sha256 and unpack it. MicroPython's source is never committed: it lives under build/.
#
#   scripts/mpy_fetch.sh DEST SHA256     -> DEST/mpy_cross_v6_3-1.1.1/micropython
set -eu
DEST=${1:?usage: mpy_fetch.sh DEST SHA256}
SHA=${2:?usage: mpy_fetch.sh DEST SHA256}
PKG=mpy-cross-v6-3
VER=1.1.1
ARCHIVE=mpy_cross_v6_3-$VER.tar.gz
PYTHON=${PYTHON:-python3}

mkdir -p "$DEST/dl"
if [ ! -f "$DEST/dl/$ARCHIVE" ]; then
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: "$PKG==$VER" -d "$DEST/dl" >&2
fi
GOT=$(sha256sum "$DEST/dl/$ARCHIVE" | cut -d' ' -f1)
if [ "$GOT" != "$SHA" ]; then
    echo "mpy_fetch: sha256 mismatch for $ARCHIVE: expected $SHA, got $GOT" >&2
    rm -f "$DEST/dl/$ARCHIVE"
    exit 1
fi
rm -rf "$DEST/mpy_cross_v6_3-$VER.tmp"
mkdir -p "$DEST/mpy_cross_v6_3-$VER.tmp"
tar xzf "$DEST/dl/$ARCHIVE" -C "$DEST/mpy_cross_v6_3-$VER.tmp"
rm -rf "$DEST/mpy_cross_v6_3-$VER"
mv "$DEST/mpy_cross_v6_3-$VER.tmp/mpy_cross_v6_3-$VER" "$DEST/mpy_cross_v6_3-$VER"
rmdir "$DEST/mpy_cross_v6_3-$VER.tmp"
echo "$DEST/mpy_cross_v6_3-$VER/micropython"
