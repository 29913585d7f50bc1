"""The memory guard (issue 19, item 2): a call whose arrays cannot fit is refused before it allocates.

Every case runs under ``SPECUX_MEMORY_LIMIT=1M`` with sizes that need some tens of MiB, so that nothing here
allocates much even where the guard were missing; the exact calls of the issue (which would take tens of GiB)
run in a child process whose address space is capped, as a second line of defence.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import specux
from specux import _memory
from specux.errors import MemoryLimitError

LIMIT = 1 << 20


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setenv("SPECUX_MEMORY_LIMIT", "1M")


def _signal(n: int = 16000, rows: int | None = None) -> np.ndarray:
    shape = (n,) if rows is None else (rows, n)
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


#: (name, call, the parameter the error must name); each needs between ~8 MiB and ~150 MiB
CASES = [
    ("stft n_fft", lambda: specux.stft(_signal(), n_fft=1 << 20), "n_fft"),
    ("stft hop_length", lambda: specux.stft(_signal(50_000), n_fft=512, hop_length=1), "hop_length"),
    ("stft long y", lambda: specux.stft(_signal(1_000_000, rows=4)), "y"),
    ("istft length", lambda: specux.istft(np.ones((257, 8), np.complex64), length=1 << 24), "length"),
    (
        "istft hop_length",
        lambda: specux.istft(np.ones((257, 8), np.complex64), hop_length=1 << 22),
        "hop_length",
    ),
    ("fft n", lambda: specux.fft.fft(_signal(), n=1 << 22), "n"),
    ("rfft n", lambda: specux.fft.rfft(_signal(), n=1 << 23), "n"),
    ("irfft n", lambda: specux.fft.irfft(np.ones(8, np.complex64), n=1 << 23), "n"),
    ("hfft n", lambda: specux.fft.hfft(np.ones(8, np.complex64), n=1 << 23), "n"),
    ("fftn s", lambda: specux.fft.fftn(np.ones((4, 4)), s=(2048, 2048)), "s"),
    ("rfft2 s", lambda: specux.fft.rfft2(np.ones((4, 4)), s=(4096, 4096)), "s"),
    ("irfftn s", lambda: specux.fft.irfftn(np.ones((4, 4), np.complex128), s=(2048, 2048)), "s"),
    ("fftfreq n", lambda: specux.fft.fftfreq(1 << 22), "n"),
    ("rfftfreq n", lambda: specux.fft.rfftfreq(1 << 22), "n"),
    ("melspectrogram n_mels", lambda: specux.melspectrogram(_signal(), sr=16000, n_mels=8192), "n_mels"),
    ("mfcc n_mels", lambda: specux.mfcc(_signal(), sr=16000, n_mels=8192), "n_mels"),
    ("lfcc n_filter", lambda: specux.lfcc(_signal(), n_fft=4096, n_filter=4096, n_lfcc=40), "n_filter"),
    ("mel bank", lambda: specux.filters.mel(sr=16000, n_fft=4096, n_mels=1024), "n_mels"),
    (
        "mel_torchaudio bank",
        lambda: specux.filters.mel_torchaudio(sr=16000, n_fft=4096, n_mels=1024),
        "n_mels",
    ),
    ("mel_frequencies", lambda: specux.filters.mel_frequencies(1 << 20), "n_mels"),
    ("linear bank", lambda: specux.filters.linear(sr=16000, n_fft=8192, n_filter=2048), "n_filter"),
    ("chroma bank", lambda: specux.filters.chroma(sr=22050, n_fft=4096, n_chroma=1200), "n_chroma"),
    (
        "chroma_stft n_chroma",
        lambda: specux.chroma_stft(_signal(4000), sr=22050, n_chroma=1200, tuning=0.0),
        "n_chroma",
    ),
    ("get_window Nx", lambda: specux.filters.get_window("hann", 1 << 21), "Nx"),
    (
        "cq_frequencies",
        lambda: specux.filters.cq_frequencies(1 << 19, fmin=32.7, bins_per_octave=1 << 16),
        "n_bins",
    ),
    ("cq_to_chroma", lambda: specux.filters.cq_to_chroma(1 << 17, bins_per_octave=12), "n_input"),
    (
        "cqt hop_length",
        lambda: specux.cqt(_signal(4096, rows=8), sr=22050, hop_length=1, fmin=2000.0, n_bins=12),
        "hop_length",
    ),
    # an odd hop: no early downsampling, so the 8 Hz filters are ~47000 samples long
    ("cqt fmin", lambda: specux.cqt(_signal(4096), sr=22050, hop_length=511, fmin=8.0, n_bins=12), "fmin"),
    (
        "vqt hop_length",
        lambda: specux.vqt(_signal(4096, rows=8), sr=22050, hop_length=1, fmin=2000.0, n_bins=12),
        "hop_length",
    ),
    ("fftconvolve shapes", lambda: specux.fftconvolve(np.ones((2048, 1)), np.ones((1, 2048))), "in1 and in2"),
    ("pitch_tuning resolution", lambda: specux.pitch_tuning([440.0], resolution=1e-7), "resolution"),
    (
        "estimate_tuning resolution",
        lambda: specux.estimate_tuning(_signal(), sr=16000, resolution=1e-7),
        "resolution",
    ),
    ("piptrack n_fft", lambda: specux.ops.tuning.piptrack(S=np.ones((1025, 200)), sr=16000), "n_fft"),
    ("autotune n", lambda: specux.plans.autotune(1 << 22, backend="cuda"), "n"),
]


@pytest.mark.parametrize("name,call,parameter", CASES, ids=[c[0] for c in CASES])
def test_calls_too_large_for_the_limit_raise_before_allocating(small_limit, name, call, parameter):
    with pytest.raises(MemoryLimitError) as info:
        call()
    err = info.value
    assert isinstance(err, MemoryError) and isinstance(err, ValueError)
    assert err.parameter == parameter
    assert err.available == LIMIT and err.needed > LIMIT
    message = str(err)
    assert parameter in message
    assert f"{err.needed:,} bytes" in message and f"{LIMIT:,} bytes" in message
    assert "SPECUX_MEMORY_LIMIT" in message


def test_the_error_names_the_parameter_its_value_and_both_sizes(small_limit):
    with pytest.raises(ValueError, match=r"^stft: n_fft=1048576 needs about [\d,]+ bytes \(.*\) of memory"):
        specux.stft(np.zeros(16000, np.float32), n_fft=1 << 20)
    with pytest.raises(ValueError, match=r"specux\.fft\.fft: n=4194304 needs about .* but 1,048,576 bytes"):
        specux.fft.fft(np.zeros(16000, np.float32), n=1 << 22)


def test_the_memory_error_comes_before_the_short_signal_warning(small_limit, recwarn):
    with pytest.raises(MemoryLimitError):
        specux.stft(np.zeros(16000, np.float32), n_fft=1 << 20)
    assert not [w for w in recwarn if "larger than the signal length" in str(w.message)]


def test_calls_within_the_limit_run(monkeypatch):
    monkeypatch.setenv("SPECUX_MEMORY_LIMIT", "64M")
    y = _signal()
    np.testing.assert_array_equal(specux.stft(y, n_fft=512), specux.stft(y, n_fft=512, backend="cpu"))
    assert specux.fft.fft(y, n=1 << 16).shape == (1 << 16,)


def test_off_lifts_the_guard_and_a_number_sets_it(monkeypatch):
    y = np.zeros(16000, np.float32)
    monkeypatch.setenv("SPECUX_MEMORY_LIMIT", "off")
    assert specux.fft.rfft(y, n=1 << 20).shape == ((1 << 19) + 1,)
    for spelling in ("1048576", "1024K", "1KiB", "1 MB", "1m"):
        monkeypatch.setenv("SPECUX_MEMORY_LIMIT", spelling)
        with pytest.raises(MemoryLimitError):
            specux.fft.rfft(y, n=1 << 20)


def test_a_bad_limit_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("SPECUX_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match=r"SPECUX_MEMORY_LIMIT must be a number of bytes.*'lots'"):
        specux.fft.rfft(np.zeros(16000, np.float32), n=1 << 20)


def test_limit_spellings(monkeypatch):
    for raw, want in [("8G", 8 << 30), ("512M", 512 << 20), ("3", 3), ("2T", 2 << 40), ("4kb", 4096)]:
        monkeypatch.setenv("SPECUX_MEMORY_LIMIT", raw)
        assert _memory.limit()[0] == want


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/meminfo")
def test_without_the_variable_the_memory_available_is_the_limit(monkeypatch):
    monkeypatch.delenv("SPECUX_MEMORY_LIMIT", raising=False)
    available = _memory.available()
    assert isinstance(available, int) and available > 0
    with pytest.raises(MemoryLimitError) as info:
        _memory.check(1 << 62, public="test", parameter="n")
    assert info.value.available <= available * 2  # the system's figure (it moves a little between reads)
    # 2**46 points of complex128 are 1 PiB, more than any machine here: refused without trying
    with pytest.raises(MemoryLimitError, match="n=70368744177664"):
        specux.fft.fft(np.zeros(8), n=1 << 46)
    with pytest.raises(MemoryLimitError, match="n_fft=70368744177664"):
        specux.stft(np.zeros(16000, np.float32), n_fft=1 << 46)


@pytest.mark.parametrize(
    "files,want",
    [
        # cgroup v2: the parent's limit is the tighter one; reclaimable page cache counts as free
        (
            {
                "/proc/self/cgroup": "0::/jobs/one\n",
                "/sys/fs/cgroup/jobs/one/memory.max": "max\n",
                "/sys/fs/cgroup/jobs/memory.max": "1000000\n",
                "/sys/fs/cgroup/jobs/memory.current": "600000\n",
                "/sys/fs/cgroup/jobs/memory.stat": "anon 1\ninactive_file 100000\n",
            },
            500_000,
        ),
        # cgroup v1 without a limit (2**63 rounded down to pages): MemAvailable
        (
            {
                "/proc/self/cgroup": "4:memory:/box\n0::/\n",
                "/sys/fs/cgroup/memory/box/memory.limit_in_bytes": "9223372036854771712\n",
                "/sys/fs/cgroup/memory/box/memory.usage_in_bytes": "5000\n",
            },
            2048 * 1024,
        ),
        # cgroup v1 with a limit below what the host has free
        (
            {
                "/proc/self/cgroup": "4:memory:/box\n",
                "/sys/fs/cgroup/memory/box/memory.limit_in_bytes": "1500000\n",
                "/sys/fs/cgroup/memory/box/memory.usage_in_bytes": "1000000\n",
                "/sys/fs/cgroup/memory/box/memory.stat": "total_inactive_file 0\n",
            },
            500_000,
        ),
    ],
    ids=["v2 parent limit", "v1 unlimited", "v1 limit"],
)
def test_the_cgroup_limit_caps_the_memory_available(monkeypatch, files, want):
    files = {"/proc/meminfo": "MemTotal: 4096 kB\nMemAvailable:    2048 kB\n", **files}
    monkeypatch.setattr(_memory, "_read", files.get)
    _memory._cgroup_limits.cache_clear()
    try:
        assert _memory.available() == want
    finally:
        _memory._cgroup_limits.cache_clear()


def test_small_requests_do_not_read_the_system(monkeypatch):
    monkeypatch.delenv("SPECUX_MEMORY_LIMIT", raising=False)

    def fail() -> None:
        raise AssertionError("the system's memory was read for a small request")

    monkeypatch.setattr(_memory, "available", fail)
    specux.stft(np.zeros(4000, np.float32), n_fft=256)


def test_torch_tensors_are_guarded_too(small_limit):
    torch = pytest.importorskip("torch")
    with pytest.raises(MemoryLimitError, match="n_fft"):
        specux.stft(torch.zeros(16000), n_fft=1 << 20)
    with pytest.raises(MemoryLimitError, match="n_mels"):
        specux.melspectrogram(torch.zeros(16000), sr=16000, n_mels=8192)


_ISSUE_CALLS = """
import resource, sys
import numpy as np
# a net under the guard: were it missing, numpy would fail here instead of the machine running out of memory
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
import specux
from specux.errors import MemoryLimitError
y = np.zeros(16000, np.float32)
for name, call in [
    ("stft", lambda: specux.stft(y, n_fft=2**31)),
    ("fft", lambda: specux.fft.fft(y, n=2**31)),
]:
    try:
        call()
    except MemoryLimitError as err:
        print(name, "refused", err.parameter)
    except MemoryError as err:
        print(name, "numpy MemoryError", err)
    else:
        print(name, "ran")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="caps the child's address space")
def test_the_calls_of_the_issue_are_refused():
    env = {**os.environ, "SPECUX_MEMORY_LIMIT": "4G", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_ISSUE_CALLS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["stft refused n_fft", "fft refused n"], done.stdout + done.stderr
