"""sys_prefetch (runtime/nx_externs.py): a cache hint that no build may turn into a fault or a
result. The f16 decode of nx_f32_gemm.nx prefetches the next chunk's halves during the sums; its
bits are checked against the scalar reference by its gate and tests/test_linear_packed.py."""
from __future__ import annotations

import os

import pytest

import nxc

from test_vectorize import _targets

GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nx", "prefetch", "prefetch.nx")


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("checked", [True, False])
def test_prefetch_never_faults_on_c(target, checked):
    opt, _, march = target.partition("/")
    assert nxc.load(GATE, opt=opt, checked=checked, march=march or None).main() == 0


def test_prefetch_never_faults_on_python():
    assert nxc.load(GATE, backend="py").main() == 0
