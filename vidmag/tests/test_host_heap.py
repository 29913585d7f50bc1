"""``vidmag.backend.host_heap.bounded_heap``: the C heap's policy during a bounded run of torch on the CPU
(glibc's mmap threshold fixed, free pages given back at both ends, the default threshold set again after),
and nothing at all when inactive or without glibc. The torch phase routes enter it on the CPU device; that
their output is unchanged is test_phase_bounded_memory_devices.py's (route against in-memory run)."""

from __future__ import annotations

import sys

import pytest

from vidmag.backend import host_heap


class FakeLibc:
    """Records the calls ``bounded_heap`` makes."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


def test_the_threshold_is_fixed_inside_and_the_default_set_again_after():
    libc = FakeLibc()
    with host_heap.bounded_heap(True, libc=libc):
        inside = list(libc.calls)
    assert inside == [("malloc_trim", 0), ("mallopt", host_heap.M_MMAP_THRESHOLD, host_heap.MMAP_THRESHOLD)]
    assert libc.calls[2:] == [("mallopt", host_heap.M_MMAP_THRESHOLD, host_heap.GLIBC_DEFAULT_THRESHOLD),
                              ("malloc_trim", 0)]
    assert host_heap.M_MMAP_THRESHOLD == -3 and host_heap.GLIBC_DEFAULT_THRESHOLD == 128 * 1024


def test_an_error_inside_still_sets_the_default_again():
    libc = FakeLibc()
    with pytest.raises(KeyboardInterrupt), host_heap.bounded_heap(True, libc=libc):
        raise KeyboardInterrupt
    assert libc.calls[-2:] == [("mallopt", -3, host_heap.GLIBC_DEFAULT_THRESHOLD), ("malloc_trim", 0)]


def test_inactive_changes_nothing():
    libc = FakeLibc()
    with host_heap.bounded_heap(False, libc=libc):
        pass
    assert libc.calls == []


def test_a_generator_holds_the_policy_until_it_is_closed():
    """The torch steps are generators: the policy lasts while frames are pulled, and an early close (the
    caller's error) ends it."""
    libc = FakeLibc()

    def frames():
        with host_heap.bounded_heap(True, libc=libc):
            yield from range(5)

    it = frames()
    assert next(it) == 0 and len(libc.calls) == 2
    it.close()
    assert libc.calls[-1] == ("malloc_trim", 0) and len(libc.calls) == 4


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc is Linux's C library here")
def test_glibc_is_found_on_linux_and_the_real_calls_run():
    libc = host_heap.glibc()
    if libc is None:
        pytest.skip("this Linux's C library is not glibc (musl has no mallopt)")
    with host_heap.bounded_heap(True):
        blocks = [bytearray(3 * 2**20) for _ in range(4)]  # mapped blocks, above the threshold
    assert sum(map(len, blocks)) == 12 * 2**20
