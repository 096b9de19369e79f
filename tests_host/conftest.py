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


@pytest.fixture
def clean_kpu():
    """MaixPy's KPU module with no flash image before the test and no loaded models after it (a test module opts in
    with `pytestmark = pytest.mark.usefixtures("clean_kpu")`)."""
    import KPU as kpu
    kpu.set_flash_image(None)
    os.environ.pop("OPENKPU_FLASH_IMAGE", None)
    yield
    for net in list(kpu._live_nets()):
        kpu.deinit(net)
    kpu.set_flash_image(None)
