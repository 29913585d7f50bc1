"""The phase-based pipelines through the public entry points: parameter validation, the backends that run
them, streaming equal to the whole-clip run, the file and command-line paths, the presets, and the noise claim
of the issue measured on a small synthetic clip."""

from __future__ import annotations

import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.backend import BackendUnavailableError
from vidmag.cli import main
from vidmag.params import PHASE_PIPELINES, STREAMING_PIPELINES, check_parameters
from vidmag.pipelines import SaturationWarning
from vidmag.presets import PRESETS, preset_params

# random small clips at alpha 10 clip a little; the warning is test_pipelines_saturation.py's subject
pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

VALID = {
    "riesz_ideal": dict(alpha=10.0, fl=1.0, fh=3.0, sigma=2.0),
    "riesz_butterworth": dict(alpha=10.0, fl=1.0, fh=3.0, sigma=2.0),
    "riesz_iir": dict(alpha=10.0, r1=0.4, r2=0.05, sigma=2.0),
    "steerable_ideal": dict(alpha=10.0, fl=1.0, fh=3.0, sigma=2.0, orientations=4, bands_per_octave=1,
                            attenuate_other_freq=False),
}
#: parameter -> values that must be refused (fs 30 Hz: Nyquist 15)
BAD = {
    "alpha": (-1.0, float("nan"), "10", None, True),
    "sigma": (-0.5, float("inf"), "2", None),
    "fl": (-1.0, 3.0, 5.0, "1"),
    "fh": (15.5, 0.5, "3"),
    "r1": (0.0, 1.5, 0.01, "0.4"),
    "r2": (0.0, 0.4, "0.05"),
    "orientations": (0, 17, 2.5, "4", True),
    "bands_per_octave": (0, 3, 1.5, "2"),
    "attenuate_other_freq": ("yes", 1, None, "False"),
}


def small_clip(T: int = 10, H: int = 24, W: int = 28, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(40, 220, (T, H, W, 3), dtype=np.uint8)


def raises_naming(name: str, call, *args, **kwargs) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SaturationWarning)
        with pytest.raises((ValueError, TypeError)) as info:
            call(*args, **kwargs)
    assert re.search(rf"\b{name}\b", str(info.value)), str(info.value)


CASES = [(p, name, bad) for p in PHASE_PIPELINES for name in VALID[p] for bad in BAD[name]]


@pytest.mark.parametrize(("pipeline", "name", "bad"), CASES)
def test_bad_parameters_are_named(pipeline, name, bad):
    params = {**VALID[pipeline], name: bad}
    raises_naming(name, vidmag.magnify, small_clip(), fs=30, pipeline=pipeline, **params)


@pytest.mark.parametrize("pipeline", PHASE_PIPELINES)
def test_unknown_and_missing_parameters_are_named(pipeline):
    raises_naming("chrom_attenuation", vidmag.magnify, small_clip(), fs=30, pipeline=pipeline,
                  **VALID[pipeline], chrom_attenuation=0.1)  # luminance only: nothing to attenuate
    params = dict(VALID[pipeline])
    del params["sigma"]
    raises_naming("sigma", vidmag.magnify, small_clip(), fs=30, pipeline=pipeline, **params)


def test_butterworth_band_edges_and_the_mit_fir_band():
    raises_naming("fl", vidmag.magnify, small_clip(), fs=30, pipeline="riesz_butterworth",
                  **{**VALID["riesz_butterworth"], "fl": 0.0})
    raises_naming("fh", vidmag.magnify, small_clip(), fs=30, pipeline="riesz_butterworth",
                  **{**VALID["riesz_butterworth"], "fh": 15.0})
    check_parameters("riesz_ideal", 30, None, {**VALID["riesz_ideal"], "fl": 0.0, "fh": 15.0})
    # the MIT phase code's fir1 needs 0 < fl and fh < fs / 2
    raises_naming("fl", vidmag.magnify, small_clip(), fs=30, pipeline="steerable_ideal", compat="mit",
                  **{**VALID["steerable_ideal"], "fl": 0.0})
    raises_naming("fh", vidmag.magnify, small_clip(), fs=30, pipeline="steerable_ideal", compat="mit",
                  **{**VALID["steerable_ideal"], "fh": 15.0})


@pytest.mark.parametrize("pipeline", PHASE_PIPELINES)
@pytest.mark.parametrize("compat", [None, "mit"])
def test_every_frame_comes_out(pipeline, compat):
    clip = small_clip(T=7)  # fewer than the linear MIT code's 11: the phase code reads every frame
    from vidmag.pipelines import select_backend

    out = vidmag.magnify(clip, fs=30, pipeline=pipeline, compat=compat, **VALID[pipeline])
    assert out.shape == clip.shape and out.dtype == np.uint8
    chosen, _ = select_backend("auto", pipeline)
    assert vidmag.magnify(clip, fs=30, pipeline=pipeline, backend=chosen, compat=compat,
                          **VALID[pipeline]).tolist() == out.tolist()
    # the backend "auto" took is within 1 grey level of the reference (the same bytes when it is cpu)
    cpu = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cpu", compat=compat, **VALID[pipeline])
    assert np.abs(cpu.astype(int) - out).max() <= (0 if chosen == "cpu" else 1)


@pytest.mark.parametrize("backend", ["vulkan", "cuda", "metal"])
def test_other_backends_are_refused_naming_the_ones_that_run_them(backend):
    # every backend runs the Riesz pipelines now (the shared kernel tier, test_riesz_kernel_tier.py);
    # steerable_ideal still runs on torch and cpu only, and these backends refuse it, clip and stream
    with pytest.raises(BackendUnavailableError, match=r"steerable_ideal.*\btorch, cpu\b"):
        vidmag.magnify(small_clip(), fs=30, pipeline="steerable_ideal", backend=backend,
                       **VALID["steerable_ideal"])
    with pytest.raises(BackendUnavailableError, match=r"\btorch, cpu\b"):
        vidmag.open_stream((24, 28, 3), fs=30, pipeline="steerable_ideal", backend=backend,
                           **VALID["steerable_ideal"])


def test_steerable_runs_on_torch_and_cpu_only():
    with pytest.raises(BackendUnavailableError, match=r"steerable_ideal.*\btorch, cpu\b"):
        vidmag.magnify(small_clip(), fs=30, pipeline="steerable_ideal", backend="opencl",
                       **VALID["steerable_ideal"])


def test_auto_takes_torch_only_with_a_graphics_processor():
    from vidmag.backend import registry
    from vidmag.pipelines import select_backend

    name, _ = select_backend("auto", "riesz_iir")
    torch_gpu = registry.unavailable_reason("torch") is None and (
        registry.backend_module("torch").default_device() != "cpu")
    # the GPU-only kernel backends first (cuda, metal); without a graphics processor the Riesz ones take
    # opencl where it runs, then vulkan on a graphics processor (phase.md)
    from vidmag.pipelines import _auto_runs

    runs = [b for b in ("cuda", "metal", "opencl", "vulkan") if _auto_runs(b)]
    gpu = [b for b in runs if b in ("cuda", "metal")]
    expected = gpu[0] if gpu else "torch" if torch_gpu else runs[0] if runs else "cpu"
    assert name == expected
    # the same rule for steerable_ideal (torch_steerable.py), which has no opencl code
    assert select_backend("auto", "steerable_ideal")[0] == ("torch" if torch_gpu else "cpu")


def test_auto_passes_over_vulkan_on_a_processor_unless_it_is_pinned(monkeypatch):
    """lavapipe ran the Riesz kernels 5-7 x slower than the NumPy reference: "auto" takes vulkan for a phase
    pipeline only on a graphics processor's driver, or when the user pinned a Vulkan device."""
    from kernelkit import vulkan as kk_vulkan
    from vidmag.backend import registry
    from vidmag.pipelines import _auto_runs

    def device(kind):
        return kk_vulkan.DeviceReport(index=0, name="a device", kind=kind, api="1.3", reason=None), None

    monkeypatch.setattr(registry, "unavailable_reason", lambda name: None)
    monkeypatch.delenv(kk_vulkan.DEVICE_ENV, raising=False)
    monkeypatch.setattr(kk_vulkan, "choose", lambda: device("cpu"))
    assert not _auto_runs("vulkan")
    assert _auto_runs("opencl")  # PoCL stays: its Riesz kernels beat the reference 2-4 x
    monkeypatch.setattr(kk_vulkan, "choose", lambda: device("discrete-gpu"))
    assert _auto_runs("vulkan")
    monkeypatch.setattr(kk_vulkan, "choose", lambda: device("cpu"))
    monkeypatch.setenv(kk_vulkan.DEVICE_ENV, "0")
    assert _auto_runs("vulkan")


@pytest.mark.parametrize("pipeline", ["riesz_ideal", "riesz_butterworth", "riesz_iir"])
def test_torch_matches_the_reference_within_one_level(require_backend, pipeline):
    """The conformance rule of the other pipelines: every output byte within 1 of the cpu reference (float32
    against float64), at a moderate and a large alpha; and the torch stream gives its whole-clip run."""
    require_backend("torch")
    clip = small_clip(T=10)
    for alpha in (10.0, 50.0):
        params = {**VALID[pipeline], "alpha": alpha}
        want = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cpu", **params)
        got = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="torch", **params)
        assert np.abs(got.astype(int) - want).max() <= 1
    if pipeline != "riesz_ideal":
        opened = vidmag.open_stream(clip.shape[1:], fs=30, pipeline=pipeline, backend="torch", **params)
        with opened as stream:
            streamed = np.concatenate([stream.push(clip[:3]), stream.push(list(clip[3:]))])
        assert np.array_equal(streamed, got)  # the same per-frame calls in the same order


def test_a_tensor_is_refused_naming_the_backend_that_runs_them():
    torch = pytest.importorskip("torch")
    clip = torch.from_numpy(small_clip())
    with pytest.raises(ValueError, match=r"riesz_iir takes NumPy frames only"):
        vidmag.magnify(clip, fs=30, pipeline="riesz_iir", **VALID["riesz_iir"])
    # a tensor in host memory given to the cpu backend runs there
    out = vidmag.magnify(clip, fs=30, pipeline="riesz_iir", backend="cpu", **VALID["riesz_iir"])
    assert isinstance(out, np.ndarray) and out.shape == tuple(clip.shape)


def test_other_backends_stages_refuse_a_phase_plan_by_name():
    from vidmag.backend.stages import TemporalFilter
    from vidmag.params import make_plan

    plan = make_plan("riesz_iir", fs=30, compat=None, params=VALID["riesz_iir"], frame_shape=(24, 28, 3))
    from vidmag.params import PHASE_BACKENDS

    names = ", ".join(f"'{b}'" for b in PHASE_BACKENDS["riesz_iir"])
    with pytest.raises(ValueError, match=f"riesz_iir is a phase-based pipeline: it runs on backend {names} "):
        TemporalFilter.of(plan)


def test_a_huge_alpha_scrambles_the_phase_but_does_not_blow_up_the_intensity():
    clip = small_clip(T=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SaturationWarning)
        out = vidmag.magnify(clip, fs=30, pipeline="riesz_iir", **{**VALID["riesz_iir"], "alpha": 1e9})
    assert out.shape == clip.shape and np.isfinite(out.astype(float)).all()


@pytest.mark.parametrize("pipeline", ["riesz_butterworth", "riesz_iir"])
def test_the_stream_equals_the_whole_clip_run(pipeline):
    assert pipeline in STREAMING_PIPELINES
    clip = small_clip(T=11)
    whole = vidmag.magnify(clip, fs=30, pipeline=pipeline, **VALID[pipeline])
    with vidmag.open_stream(clip.shape[1:], fs=30, pipeline=pipeline, **VALID[pipeline]) as stream:
        pieces = [stream.push(clip[0]), stream.push(clip[1:4]), stream.push(list(clip[4:6])),
                  stream.push(clip[6:])]
        assert stream.frames_pushed == 11 and not stream.closed
    assert stream.closed
    assert pieces[0].shape == clip.shape[1:]
    streamed = np.concatenate([pieces[0][None], *pieces[1:]])
    # the same frame-by-frame code in the same order: equal bytes, and frame 0 is its input
    assert np.array_equal(streamed, whole)
    assert np.array_equal(whole[0], clip[0])
    with pytest.raises(ValueError, match="closed"):
        stream.push(clip[0])


def test_retune_of_alpha_and_sigma_is_exact_and_a_new_band_keeps_going():
    from vidmag.params import make_plan

    clip = small_clip(T=9)
    params = VALID["riesz_butterworth"]
    changed = {**params, "alpha": 4.0, "sigma": 1.0}
    want = vidmag.magnify(clip, fs=30, pipeline="riesz_butterworth", **changed)
    stream = vidmag.open_stream(clip.shape[1:], fs=30, pipeline="riesz_butterworth", **params)
    first = stream.push(clip[:4])
    plan = make_plan("riesz_butterworth", fs=30, compat=None, params=changed, frame_shape=clip.shape[1:])
    assert stream.retune(plan)
    # alpha and sigma act after the filters: the frames after the change are the new run's
    assert np.array_equal(stream.push(clip[4:]), want[4:])
    assert not np.array_equal(first[1:], want[1:4])
    band = make_plan("riesz_butterworth", fs=30, compat=None, params={**changed, "fh": 5.0},
                     frame_shape=clip.shape[1:])
    assert stream.retune(band) and stream.push(clip[0]).shape == clip.shape[1:]
    other = make_plan("riesz_iir", fs=30, compat=None, params=VALID["riesz_iir"], frame_shape=clip.shape[1:])
    assert not stream.retune(other)


@pytest.mark.parametrize("pipeline", ["riesz_ideal", "steerable_ideal"])
def test_the_ideal_ones_cannot_stream(pipeline):
    with pytest.raises(ValueError, match=rf"{pipeline} cannot stream.*riesz_butterworth or riesz_iir"):
        vidmag.open_stream((24, 28, 3), fs=30, pipeline=pipeline, **VALID[pipeline])


def test_stream_refuses_frames_of_another_shape():
    with vidmag.open_stream((24, 28, 3), fs=30, pipeline="riesz_iir", **VALID["riesz_iir"]) as stream:
        with pytest.raises(ValueError, match="frames"):
            stream.push(np.zeros((24, 29, 3), np.uint8))


@pytest.mark.parametrize("name", ["guitar_e_phase", "baby_phase"])
@pytest.mark.parametrize("compat", [None, "mit"])
def test_phase_presets_validate_and_keep_the_papers_values(name, compat):
    pipeline, fs, params = preset_params(name, compat)
    assert pipeline in PHASE_PIPELINES and params == PRESETS[name].paper  # the phase code's alpha as it is
    check_parameters(pipeline, fs, compat, params)


def write_clip(path, frames: np.ndarray) -> None:
    height, width = frames.shape[1:3]
    with io.VideoWriter(path, width=width, height=height, fps=Fraction(30), quality=0) as w:
        for frame in frames:
            w.write(frame)


def test_cli_magnifies_with_a_riesz_pipeline(tmp_path, capsys):
    src, dst = tmp_path / "in.mp4", tmp_path / "out.mp4"
    write_clip(str(src), small_clip(T=8, H=32, W=32))
    code = main(["magnify", str(src), "-o", str(dst), "--pipeline", "riesz_iir", "--alpha", "5", "--r1",
                 "0.4", "--r2", "0.05", "--sigma", "2", "-q"])
    assert code == 0 and dst.exists()
    assert sum(1 for _ in io.frame_source(str(dst))()) == 8


def test_cli_steerable_options_and_a_bad_flag(tmp_path, capsys):
    src, dst = tmp_path / "in.mp4", tmp_path / "out.mp4"
    write_clip(str(src), small_clip(T=6, H=32, W=32))
    args = ["magnify", str(src), "-o", str(dst), "--pipeline", "steerable_ideal", "--alpha", "5", "--fl", "1",
            "--fh", "3", "--sigma", "1", "--orientations", "4", "--bands-per-octave", "1", "-q"]
    assert main([*args, "--attenuate-other-freq", "no"]) == 0 and dst.exists()
    dst.unlink()
    assert main([*args, "--attenuate-other-freq", "maybe"]) == 2
    assert "attenuate-other-freq" in capsys.readouterr().err and not dst.exists()


def test_magnify_file_with_a_bad_sigma_leaves_nothing(tmp_path):
    src, dst = tmp_path / "in.mp4", tmp_path / "out.mp4"
    write_clip(str(src), small_clip(T=6, H=32, W=32))
    before = sorted(p.name for p in tmp_path.iterdir())
    raises_naming("sigma", vidmag.magnify_file, str(src), str(dst), pipeline="riesz_ideal",
                  **{**VALID["riesz_ideal"], "sigma": -1.0})
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# --- the noise claim --------------------------------------------------------------------------------------

FS, T, SIZE, ALPHA, MOTION = 30.0, 64, 64, 20.0, 0.05
F0 = 4 * FS / T  # 1.875 Hz, an FFT bin of the clip


@pytest.fixture(scope="module")
def scene():
    """A smooth periodic random texture (std 30 grey levels, no detail finer than 3 px) and its translation
    by any sub-pixel amount (exact, by the Fourier shift theorem)."""
    rng = np.random.default_rng(1)
    ky, kx = np.fft.fftfreq(SIZE)[:, None], np.fft.fftfreq(SIZE)[None, :]
    k = np.hypot(kx, ky)
    spectrum = (rng.normal(size=(SIZE, SIZE)) + 1j * rng.normal(size=(SIZE, SIZE)))
    spectrum *= (k < 0.35) / np.maximum(k, 1 / 32) ** 1.5
    spectrum[0, 0] = 0
    base = np.real(np.fft.ifft2(spectrum))
    spectrum = np.fft.fft2((base - base.mean()) / base.std() * 30 + 128)
    return lambda dx: np.real(np.fft.ifft2(spectrum * np.exp(-2j * np.pi * kx * dx)))


def test_riesz_beats_linear_magnification_under_noise(scene, filtered_motion):
    """The issue's noise test: alpha 20, 0.05 px motion, noise sigma 1 grey level (each channel), PSNR on the
    interior (8 px from the mirrored borders) against the texture translated by d + alpha * d_f, d_f being
    the pipeline's own temporal filter applied to d (so a pipeline is judged on what its filter asks of it;
    pipelines with different filters have different truths and are compared like for like).

    Measured (dB): laplacian_butterworth 38.1 (lambda_c 4, its best; 37.0 at lambda_c 16), riesz_butterworth
    40.9; laplacian_ideal 32.6, riesz_ideal 35.4; laplacian_iir 34.9, riesz_iir 37.9. So Riesz gains 2.8 to
    3.0 dB over the linear pipeline with the same filter, and 3.9 dB over laplacian_butterworth at lambda_c
    16:
    the issue's "3 dB above laplacian_butterworth" holds against lambda_c 16, not quite (2.8) against the best
    lambda_c. Why, found by the same runs without noise: at sigma 1 the noise costs every pipeline under
    0.5 dB here, so the gap is not noise but the linear pipelines' first-order approximation failing at the
    magnified motion (1 px on a texture of 3 to 8 px wavelengths); and riesz_ideal's truth is a motion twice
    as large as the Butterworth pipelines' (its filter passes all of F0), which is why it scores below
    laplacian_butterworth though above laplacian_ideal. The test asks 2.5 dB over the same filter's linear
    pipeline (lambda_c 4) for each, and 3 dB for riesz_butterworth over laplacian_butterworth at lambda_c 16.
    """
    d = MOTION * np.sin(2 * np.pi * F0 * np.arange(T) / FS)
    rng = np.random.default_rng(2)
    clean = np.stack([scene(v) for v in d])
    noisy = clean[..., None] + rng.normal(0, 1.0, (T, SIZE, SIZE, 3))
    frames = np.clip(np.round(noisy), 0, 255).astype(np.uint8)
    inner = (slice(None), slice(8, -8), slice(8, -8))

    def psnr(pipeline: str, kind: str, band: dict, **params) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SaturationWarning)
            out = vidmag.magnify(frames, fs=FS, pipeline=pipeline, alpha=ALPHA, **band, **params)
        truth = np.stack([scene(v) for v in d + ALPHA * filtered_motion(kind, d, FS, **band)])
        error = out.astype(np.float64).mean(axis=-1) - truth
        return 10 * np.log10(255.0**2 / np.mean(error[inner] ** 2))

    butter, iir = dict(fl=1.0, fh=3.0), dict(r1=0.4, r2=0.05)
    linear = dict(lambda_c=4.0, chrom_attenuation=0.0)
    pairs = {
        "butterworth": (psnr("riesz_butterworth", "butterworth", butter, sigma=2.0),
                        psnr("laplacian_butterworth", "butterworth", butter, **linear)),
        "ideal": (psnr("riesz_ideal", "ideal", butter, sigma=2.0),
                  psnr("laplacian_ideal", "ideal", butter, **linear)),
        "iir": (psnr("riesz_iir", "iir", iir, sigma=2.0), psnr("laplacian_iir", "iir", iir, **linear)),
    }
    for kind, (phase, eulerian) in pairs.items():
        assert phase >= eulerian + 2.5, f"{kind}: Riesz {phase:.2f} dB, linear {eulerian:.2f} dB"
    lambda_16 = psnr("laplacian_butterworth", "butterworth", butter, lambda_c=16.0, chrom_attenuation=0.0)
    assert pairs["butterworth"][0] >= lambda_16 + 3.0, (pairs["butterworth"][0], lambda_16)
