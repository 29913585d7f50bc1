"""A process forked after a device runtime was created gets ForkedProcessError, with the spawn advice, instead
of a hang; its exit does not wait on the parent's queues; a spawned worker uses the device normally.

(PoCL's worker threads do not exist in a forked child, so using the parent's context there waited forever
before this check; CUDA contexts are documented as unusable after fork.)
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys

import numpy as np
import pytest

from kernelkit import ForkedProcessError

TIMEOUT = 60


@pytest.fixture(scope="module")
def opencl_rt(require):
    from kernelkit import opencl

    require("opencl", opencl.probe())
    return opencl.default_runtime()


def _child_uses_opencl(queue) -> None:
    from kernelkit import opencl

    try:
        rt = opencl.default_runtime()
        rt.upload(np.zeros(4, np.float32))
        queue.put("no error")
    except ForkedProcessError as exc:
        queue.put(f"ForkedProcessError: {exc}")
    except Exception as exc:  # any other type is a failure of the test, reported as such
        queue.put(f"{type(exc).__name__}: {exc}")


def _child_uses_the_parents_object(rt, queue) -> None:
    try:
        rt.upload(np.zeros(4, np.float32))
        queue.put("no error")
    except ForkedProcessError:
        queue.put("ForkedProcessError")


def _run(ctx_name: str, target, *args) -> tuple[int | None, str]:
    ctx = mp.get_context(ctx_name)
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    proc.join(TIMEOUT)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
        return None, "hung"
    return proc.exitcode, queue.get(timeout=5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_the_spawn_advice_not_a_hang(opencl_rt):
    code, message = _run("fork", _child_uses_opencl)
    assert code == 0, message
    assert message.startswith("ForkedProcessError"), message
    assert "'spawn'" in message and "OpenCL" in message


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_runtime_object_carried_into_a_fork_refuses_too(opencl_rt):
    code, message = _run("fork", _child_uses_the_parents_object, opencl_rt)
    assert (code, message) == (0, "ForkedProcessError")


def test_a_fresh_worker_process_uses_the_device(opencl_rt):
    """What the spawn start method gives a worker: a new interpreter, which builds its own context (run as a
    subprocess: the spawn context would have to import this test module by name)."""
    code = (
        "import numpy as np, specux; "
        "y = np.random.default_rng(0).standard_normal((2, 4000)).astype(np.float32); "
        "print(float(np.abs(specux.stft(y, n_fft=256, backend='opencl')).sum()))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    import specux

    y = np.random.default_rng(0).standard_normal((2, 4000)).astype(np.float32)
    want = float(np.abs(specux.stft(y, n_fft=256, backend="cpu")).sum())
    assert abs(float(proc.stdout.split()[-1]) - want) <= 1e-4 * want
