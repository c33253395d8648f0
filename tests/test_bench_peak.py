"""The benches' measure of a call's memory (bench/_common.py's ``peak_mark``): the rise above
what the process held when the call began, not above an earlier peak of the process."""

import numpy as np
import pytest


@pytest.mark.parametrize("peak_mark_resets", [True, False])
def test_a_calls_peak_counts_what_it_touched_and_not_an_earlier_peak(monkeypatch, peak_mark_resets):
    # False: where the kernel's mark cannot be reset, the RSS sampler measures instead
    import bench._common as common
    from bench._common import peak_mark, peak_since

    if not peak_mark_resets:
        monkeypatch.setattr(common, "_reset_peak", lambda: False)
    # Both arrays are over glibc's largest mmap threshold (32 MiB): each is mapped anew and
    # given back when freed. A smaller one can reuse heap pages that an earlier test freed and
    # that are still resident, and then no measure of the RSS sees it (30 MiB rose by 0 after
    # tests/test_bad_input.py).
    earlier = np.ones(160 * 2**20 // 8)  # a 160 MiB peak before the call, then freed
    del earlier
    mark = peak_mark()
    block = np.ones(64 * 2**20 // 8)  # the call touches 64 MiB
    rise = peak_since(mark)
    assert block.sum() > 0
    assert 55 <= rise < 100  # ru_maxrss over the earlier peak would say 0
