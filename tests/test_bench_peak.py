"""The benches' measure of a call's memory (bench/_common.py's ``peak_mark``): the rise above
what the process held when the call began, not above an earlier peak of the process."""

import numpy as np


def test_a_calls_peak_counts_what_it_touched_and_not_an_earlier_peak():
    from bench._common import peak_mark, peak_since

    earlier = np.ones(80 * 2**20 // 8)  # an 80 MiB peak before the call, then freed
    del earlier
    mark = peak_mark()
    block = np.ones(30 * 2**20 // 8)  # the call touches 30 MiB
    rise = peak_since(mark)
    assert block.sum() > 0
    assert 25 <= rise < 60  # ru_maxrss over the earlier peak would say 0
