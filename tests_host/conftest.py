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


@pytest.fixture
def shared_layer_model(tmp_path):
    """A v3 kmodel of one 1x1 KPU layer that the emulator shares between threads (32 -> 32 channels over 40x30, its
    output copied to main memory): what the benchmark scripts' tests time."""
    import numpy as np
    from openkpu import kmodel_writer as kw
    rng = np.random.default_rng(3)
    conv = kw.KpuConv(in_w=40, in_h=30, in_c=32, out_c=32, kernel=1, weights=rng.integers(0, 256, (32, 32, 1, 1)),
                      bn_mul=[int(v) for v in rng.integers(1, 1000, 32)], bn_add=[0] * 32, bn_shift=[12] * 32,
                      act=kw.ActTable.linear(1, 4), src=0, dst=200, main_out=0)
    path = tmp_path / "one_layer.kmodel"
    path.write_bytes(kw.V3Model(layers=[conv], outputs=[(0, 40 * 30 * 32)]).to_bytes())
    return path
