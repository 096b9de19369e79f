#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fetch a PyPI source distribution, check its sha256 and unpack it: how the firmware gets third-party C sources
# (littlefs from littlefs-python's sdist) without committing them.
#
#   scripts/sdist_fetch.sh PACKAGE VERSION SHA256 DEST   -> DEST/<archive stem> (printed)
set -eu
PKG=${1:?usage: sdist_fetch.sh PACKAGE VERSION SHA256 DEST}
VER=${2:?usage}
SHA=${3:?usage}
DEST=${4:?usage}
PYTHON=${PYTHON:-python3}
STEM=$(echo "$PKG" | tr '-' '_')-$VER
ARCHIVE=$STEM.tar.gz

mkdir -p "$DEST/dl"
if [ ! -f "$DEST/dl/$ARCHIVE" ]; then
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: "$PKG==$VER" -d "$DEST/dl" >&2
fi
GOT=$(sha256sum "$DEST/dl/$ARCHIVE" | cut -d' ' -f1)
if [ "$GOT" != "$SHA" ]; then
    echo "sdist_fetch: sha256 mismatch for $ARCHIVE: expected $SHA, got $GOT" >&2
    rm -f "$DEST/dl/$ARCHIVE"
    exit 1
fi
rm -rf "$DEST/$STEM.tmp"
mkdir -p "$DEST/$STEM.tmp"
tar xzf "$DEST/dl/$ARCHIVE" -C "$DEST/$STEM.tmp"
rm -rf "$DEST/$STEM"
mv "$DEST/$STEM.tmp/$STEM" "$DEST/$STEM"
rmdir "$DEST/$STEM.tmp"
echo "$DEST/$STEM"
