"""The orders C++'s standard library leaves behind, so ties come out where PyTorch's CPU kernels put them.

Which of several equal elements ``median(dim)``, ``mode`` or ``kthvalue`` reports is not defined by
their maths but by the algorithm that ran: ``std::nth_element`` (median), ``std::sort`` (mode, which
sorts (value, index) pairs comparing values only) and PyTorch's own ``quick_select_template``
(kthvalue, from ``aten/src/ATen/native/SortingUtils.h``). The first two are libstdc++'s introselect
and introsort, written out step for step below (median-of-three pivot, unguarded partition,
insertion sort under 16 elements, heap select/sort past the depth limit); each works in place on a
Python list with a ``less(a, b)`` comparator, so a learner can follow it and a test can compare the
indices with torch's.
"""
from __future__ import annotations

THRESHOLD = 16  # libstdc++'s _S_threshold: below it introsort leaves the rest to insertion sort


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _move_median_to_first(items, result, a, b, c, less) -> None:
    if less(items[a], items[b]):
        if less(items[b], items[c]):
            items[result], items[b] = items[b], items[result]
        elif less(items[a], items[c]):
            items[result], items[c] = items[c], items[result]
        else:
            items[result], items[a] = items[a], items[result]
    elif less(items[a], items[c]):
        items[result], items[a] = items[a], items[result]
    elif less(items[b], items[c]):
        items[result], items[c] = items[c], items[result]
    else:
        items[result], items[b] = items[b], items[result]


def _unguarded_partition(items, first, last, pivot, less) -> int:
    while True:
        while less(items[first], items[pivot]):
            first += 1
        last -= 1
        while less(items[pivot], items[last]):
            last -= 1
        if not first < last:
            return first
        items[first], items[last] = items[last], items[first]
        first += 1


def _unguarded_partition_pivot(items, first, last, less) -> int:
    middle = first + (last - first) // 2
    _move_median_to_first(items, first, first + 1, middle, last - 1, less)
    return _unguarded_partition(items, first + 1, last, first, less)


def _unguarded_linear_insert(items, last, less) -> None:
    value = items[last]
    before = last - 1
    while less(value, items[before]):
        items[last] = items[before]
        last = before
        before -= 1
    items[last] = value


def _insertion_sort(items, first, last, less) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if less(items[i], items[first]):
            value = items[i]
            items[first + 1:i + 1] = items[first:i]
            items[first] = value
        else:
            _unguarded_linear_insert(items, i, less)


def _push_heap(items, first, hole, top, value, less) -> None:
    parent = (hole - 1) // 2
    while hole > top and less(items[first + parent], value):
        items[first + hole] = items[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    items[first + hole] = value


def _adjust_heap(items, first, hole, length, value, less) -> None:
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(items[first + child], items[first + child - 1]):
            child -= 1
        items[first + hole] = items[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        items[first + hole] = items[first + child - 1]
        hole = child - 1
    _push_heap(items, first, hole, top, value, less)


def _make_heap(items, first, last, less) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(items, first, parent, length, items[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(items, first, last, result, less) -> None:
    value = items[result]
    items[result] = items[first]
    _adjust_heap(items, first, 0, last - first, value, less)


def _heap_select(items, first, middle, last, less) -> None:
    _make_heap(items, first, middle, less)
    for i in range(middle, last):
        if less(items[i], items[first]):
            _pop_heap(items, first, middle, i, less)


def _sort_heap(items, first, last, less) -> None:
    while last - first > 1:
        last -= 1
        _pop_heap(items, first, last, last, less)


def _introsort_loop(items, first, last, depth, less) -> None:
    while last - first > THRESHOLD:
        if depth == 0:
            _heap_select(items, first, last, last, less)  # std::__partial_sort(first, last, last)
            _sort_heap(items, first, last, less)
            return
        depth -= 1
        cut = _unguarded_partition_pivot(items, first, last, less)
        _introsort_loop(items, cut, last, depth, less)
        last = cut


def std_sort(items: list, less) -> None:
    """``std::sort(items.begin(), items.end(), less)`` as libstdc++ runs it (not stable)."""
    n = len(items)
    if n < 2:
        return
    _introsort_loop(items, 0, n, 2 * _log2(n), less)
    if n > THRESHOLD:
        _insertion_sort(items, 0, THRESHOLD, less)
        for i in range(THRESHOLD, n):
            _unguarded_linear_insert(items, i, less)
    else:
        _insertion_sort(items, 0, n, less)


def nth_element(items: list, nth: int, less) -> None:
    """``std::nth_element(begin, begin + nth, end, less)`` as libstdc++ runs it (introselect)."""
    first, last = 0, len(items)
    if first == last or nth == last:
        return
    depth = 2 * _log2(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(items, first, nth + 1, last, less)
            items[first], items[nth] = items[nth], items[first]
            return
        depth -= 1
        cut = _unguarded_partition_pivot(items, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(items, first, last, less)


def quick_select(values: list, indices: list, k: int, greater) -> None:
    """PyTorch's ``quick_select_template`` (kthvalue): moves the k-th smallest to ``values[k]``,
    swapping ``indices`` alongside; ``greater(a, b)`` is PyTorch's ``gt_or_nan``."""

    def swap(i, j):
        values[i], values[j] = values[j], values[i]
        indices[i], indices[j] = indices[j], indices[i]

    low, high = 0, len(values) - 1
    while True:
        if high <= low:
            return
        if high == low + 1:
            if greater(values[low], values[high]):
                swap(low, high)
            return
        middle = low + (high - low) // 2
        swap(middle, low + 1)
        if greater(values[low + 1], values[high]):
            swap(low + 1, high)
        if greater(values[low], values[high]):
            swap(low, high)
        if greater(values[low + 1], values[low]):
            swap(low + 1, low)
        i, j = low + 1, high
        pivot = values[low]
        while True:
            i += 1
            while greater(pivot, values[i]):
                i += 1
            j -= 1
            while greater(values[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(low, j)
        if j <= k:
            low = i
        if j >= k:
            high = j - 1
