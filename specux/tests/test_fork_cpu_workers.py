"""A data-loader worker forked from a process that already ran specux on the CPU (its thread pools, its BLAS
limits) computes the same result in the child, and importing specux initialises no device."""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys

import numpy as np
import pytest

import specux

torch = pytest.importorskip("torch")


def _child(y, queue) -> None:
    queue.put(specux.melspectrogram(y, sr=16000, n_fft=512).numpy())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_worker_runs_specux_on_cpu_tensors():
    y = torch.from_numpy(np.random.default_rng(0).standard_normal((4, 16000)).astype(np.float32))
    want = specux.melspectrogram(y, sr=16000, n_fft=512).numpy()  # the parent's pools exist now
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(y, queue))
    proc.start()
    try:
        got = queue.get(timeout=60)  # before join: the child's queue feeder waits for the pipe to drain
    except Exception:
        proc.kill()
        pytest.fail("the forked worker hung or failed")
    proc.join(30)
    assert proc.exitcode == 0
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_importing_specux_touches_no_device_library():
    """Beyond what torch itself imports (torch 2.11 imports cuda.bindings), specux imports no device library
    and opens no device runtime, even after a CPU transform."""
    code = (
        "import sys, numpy as np, torch; before = set(sys.modules); "
        "import specux, specux.torch, kernelkit.runtime as r; "
        "specux.stft(np.zeros(4096, np.float32), n_fft=256); "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in ('pyopencl', 'cuda.bindings.driver', 'cupy', 'Metal', 'vulkan') "
        "if m in new), len(r.open_runtimes()))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[] 0"


def _child_pool(queue) -> None:
    from specux._threads import for_each, pool

    seen: list[int] = []
    for_each(seen.append, list(range(8)))
    queue.put((sorted(seen), pool().submit(lambda: 41 + 1).result(timeout=20)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_after_the_pool_ran_gets_a_pool_of_its_own():
    # the parent's pool has workers now; in the child they do not exist, and work handed to that pool waited
    # for them forever (a melspectrogram of 4 x 16000 in a data loader's worker hung)
    import time

    from specux._threads import pool

    # every worker started and idle (each task waits, so that the next one needs another worker)
    workers = pool()._max_workers
    assert list(pool().map(lambda i: time.sleep(0.05) or i, range(2 * workers))) == list(range(2 * workers))
    assert len(pool()._threads) == workers
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_pool, args=(queue,))
    proc.start()
    try:
        got = queue.get(timeout=60)
    except Exception:
        proc.kill()
        pytest.fail("the forked child's work on the pool never ran")
    proc.join(30)
    assert proc.exitcode == 0
    assert got == (list(range(8)), 42)
