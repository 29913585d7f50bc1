"""Ctrl-C during a specux call: the process ends with KeyboardInterrupt within seconds (no hang, no crash),
and kernelkit's cache directory holds no temporary file afterwards (issue 19, docs/specux/api.md "What is
written, and interruption").

Real processes are interrupted: a child imports specux, prints "ready" and runs ``specux.stft`` on a large
float32 batch in a loop; the parent sends SIGINT about a second after "ready". On opencl the child is
interrupted with its kernels compiled ("warm": the interrupt lands in a launch or a wait) and 0.2 s and 0.5 s
into its first call ("cold": on this machine the first lands in the device probe, the second in a kernel
build with half of the cache written), and the cache it leaves is then used by a fresh process, whose
results must match the cpu backend's.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time

import pytest

#: seconds the child has, after SIGINT, to be gone
EXIT_WITHIN = 20.0
#: seconds after "ready" at which SIGINT is sent to a warm child: about a second into its loop
DELAY = 1.0

_CHILD = """\
import sys

import numpy as np

import specux

backend, warm = sys.argv[1], sys.argv[2] == "warm"
x = np.random.default_rng(0).standard_normal((16, 160000), dtype=np.float32)
if warm:
    specux.stft(x[:1], n_fft=1024, hop_length=256, backend=backend)
print("ready", flush=True)
while True:
    specux.stft(x, n_fft=1024, hop_length=256, backend=backend)
"""

_AFTER = """\
import numpy as np

import specux

x = np.random.default_rng(1).standard_normal((2, 20000), dtype=np.float32)
got = specux.stft(x, n_fft=1024, hop_length=256, backend="opencl")
expected = specux.stft(x, n_fft=1024, hop_length=256, backend="cpu")
scale = float(np.abs(expected).max())
assert float(np.abs(got - expected).max()) <= 1e-4 * scale, "the cached kernels give other numbers"
print("ok", flush=True)
"""


def _env(cache) -> dict[str, str]:
    env = dict(os.environ, KERNELKIT_CACHE_DIR=str(cache), PYTHONUNBUFFERED="1")
    env.pop("KERNELKIT_DUMP_SOURCE", None)  # nothing but the cache may be written
    return env


def _interrupt(backend: str, warm: bool, cache, delay: float = DELAY) -> tuple[int, str]:
    """Run the child, SIGINT it ``delay`` s after it says "ready"; (its status, its stderr)."""
    mode = "warm" if warm else "cold"
    process = subprocess.Popen(
        [sys.executable, "-c", _CHILD, backend, mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(cache),
    )
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            line = ""
            deadline = time.monotonic() + 180  # import, and the warm-up call, on a busy machine
            while line != "ready\n" and process.poll() is None and time.monotonic() < deadline:
                if selector.select(timeout=1.0):
                    line = process.stdout.readline()
        if line != "ready\n":
            process.kill()
            _, err = process.communicate()
            pytest.fail(f"the child never said ready (status {process.returncode}): {err[-2000:]}")
        time.sleep(delay)
        assert process.poll() is None, f"the child ended before the interrupt: {process.communicate()[1]}"
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            _, err = process.communicate(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
            pytest.fail(f"the child did not end within {EXIT_WITHIN} s of SIGINT (a hang): {err[-2000:]}")
        assert time.monotonic() - sent < EXIT_WITHIN
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


def _check_ended_by_the_interrupt(status: int, err: str) -> None:
    # Python re-raises SIGINT on itself after printing the traceback of an uncaught KeyboardInterrupt: the
    # status is -SIGINT (what a shell shows as 130); 130 itself if something exits with it
    assert status in (130, -signal.SIGINT), f"status {status}, not the interrupt's: {err[-2000:]}"
    assert "Fatal Python error" not in err and "Segmentation fault" not in err, err[-2000:]
    lines = [line for line in err.strip().splitlines() if line.strip()]
    if lines:  # the traceback, when there is one, is the interrupt's
        # (an OpenCL compiler running in the process may print its own words first: an interrupted build has
        # PoCL's clang say "1 error generated.")
        assert "Traceback (most recent call last):" in lines, err[-2000:]
        assert lines[-1] == "KeyboardInterrupt", err[-2000:]


def _temporary_files(cache) -> list[str]:
    # kernelkit.cache.atomic_write writes "<name>.<random>.tmp" beside its target, then os.replace()s it
    if not cache.exists():
        return []
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file() and p.suffix == ".tmp")


def test_ctrl_c_during_stft_on_cpu_ends_the_call(tmp_path):
    cache = tmp_path / "cache"
    status, err = _interrupt("cpu", warm=True, cache=cache)
    _check_ended_by_the_interrupt(status, err)
    assert _temporary_files(cache) == []


@pytest.mark.parametrize(("warm", "delay"), [(True, DELAY), (False, 0.2), (False, 0.5)],
                         ids=["warm", "cold-0.2s", "cold-0.5s"])
def test_ctrl_c_during_stft_on_opencl_ends_the_call_and_leaves_a_sound_cache(tmp_path, require_backend, warm,
                                                                             delay):
    require_backend("opencl")
    cache = tmp_path / "cache"
    status, err = _interrupt("opencl", warm=warm, cache=cache, delay=delay)
    _check_ended_by_the_interrupt(status, err)
    assert _temporary_files(cache) == []
    # what the interrupted process left in the cache is read by the next one, which gets the right numbers
    after = subprocess.run([sys.executable, "-c", _AFTER], capture_output=True, text=True, env=_env(cache),
                           timeout=300)
    assert after.returncode == 0 and after.stdout == "ok\n", after.stderr[-2000:]
    assert _temporary_files(cache) == []
