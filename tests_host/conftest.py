# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: where the real models live, and skipping (with the reason) when they are absent."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))
BUILD = ROOT / "build"


def testdata_file(*parts):
    """Path of a file under ../shared/testdata, or skip the test saying which file is missing."""
    path = TESTDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip("real-model data not found: %s (set OPENKPU_TESTDATA or place ../shared/testdata)" % path)
    return path


@pytest.fixture
def testdata():
    return testdata_file
