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
def one_layer_model(tmp_path):
    """Write a v3 kmodel of one KPU layer, channels -> channels over 40x30 (kernel 1 or 3, random weights from `seed`),
    its output copied to main memory, and return its path: one_layer_model(channels, kernel, seed)."""
    import numpy as np
    from openkpu import kmodel_writer as kw

    def write(channels, kernel, seed):
        rng = np.random.default_rng(seed)
        conv = kw.KpuConv(in_w=40, in_h=30, in_c=channels, out_c=channels, kernel=kernel,
                          weights=rng.integers(0, 256, (channels, channels, kernel, kernel)),
                          bn_mul=[int(v) for v in rng.integers(1, 1000, channels)], bn_add=[0] * channels,
                          bn_shift=[12 if kernel == 1 else 14] * channels, act=kw.ActTable.linear(1, 4), src=0,
                          dst=kw.kpu_map_rows(40, 30, channels), main_out=0)  # (the output right after the input)
        path = tmp_path / ("conv%dx%d_%d.kmodel" % (kernel, kernel, channels))
        path.write_bytes(kw.V3Model(layers=[conv], outputs=[(0, 40 * 30 * channels)]).to_bytes())
        return path
    return write


@pytest.fixture
def shared_layer_model(one_layer_model):
    """A v3 kmodel of one 1x1 KPU layer that the emulator shares between threads (32 -> 32 channels over 40x30): what
    the benchmark scripts' tests time."""
    return one_layer_model(32, 1, 3)
