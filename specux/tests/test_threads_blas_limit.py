"""``specux._threads.single_threaded_blas``: the limit to one BLAS thread holds on whichever thread enters it,
and the count goes back to what it was when the last caller leaves, whichever thread that is."""

from __future__ import annotations

import threading

import numpy  # noqa: F401  (loads the BLAS that threadpoolctl looks for)
import pytest

from specux._threads import single_threaded_blas

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def _in_thread(fn) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]


@pytest.fixture
def blas_threads() -> list[int]:
    counts = _blas_threads()
    if not counts or max(counts) < 2:
        pytest.skip("needs a BLAS that threadpoolctl controls, running on several threads")
    return counts


def test_the_limit_holds_on_a_thread_after_the_main_thread_used_it(blas_threads):
    # threadpoolctl 3.8 lets one thread (for a pthreads OpenBLAS) change the count: the main thread took that
    # claim on its first use and kept it, and the limit did nothing on every other thread
    with single_threaded_blas():
        assert _blas_threads() == [1] * len(blas_threads)
    seen = []

    def limited() -> None:
        with single_threaded_blas():
            seen.append(_blas_threads())

    _in_thread(limited)
    _in_thread(limited)
    assert seen == [[1] * len(blas_threads)] * 2
    assert _blas_threads() == blas_threads


def test_the_count_comes_back_when_the_last_caller_is_another_thread(blas_threads):
    # a thread enters first and leaves first, while it lives on; the main thread leaves last and restores
    entered, leave, gone, finish = (threading.Event() for _ in range(4))

    def first() -> None:
        with single_threaded_blas():
            entered.set()
            leave.wait(10)
        gone.set()
        finish.wait(10)  # still alive when the main thread leaves

    t = threading.Thread(target=first)
    t.start()
    try:
        assert entered.wait(10)
        with single_threaded_blas():
            assert _blas_threads() == [1] * len(blas_threads)
            leave.set()
            assert gone.wait(10)
            assert _blas_threads() == [1] * len(blas_threads)  # the main thread's products still limited
        assert _blas_threads() == blas_threads
    finally:
        leave.set()
        finish.set()
        t.join()


def test_a_blas_loaded_after_the_first_limit_is_limited_too(blas_threads):
    # the controller used to be made once: a library loaded later (OpenCV's wheel bundles its own OpenBLAS,
    # loaded by the face tests) kept all its threads under the limit
    with single_threaded_blas():
        pass
    cv2 = pytest.importorskip("cv2")  # noqa: F841  (loads its OpenBLAS, where the wheel has one)
    counts = _blas_threads()
    with single_threaded_blas():
        assert _blas_threads() == [1] * len(counts)
    assert _blas_threads() == counts
