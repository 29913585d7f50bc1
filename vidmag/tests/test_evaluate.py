"""vidmag.evaluate: the metrics against known values, the synthetic protocol's measurement against its exact
ground truth and the linear theory of the Laplacian pipelines, the clip report, and ``vidmag evaluate``."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from vidmag import io
from vidmag.cli import main
from vidmag.evaluate import clip_report, measure_shift, psnr, ssim, synthetic_report
from vidmag.evaluate import synthetic as protocol_module
from vidmag.evaluate.metrics import PEAK, SSIM_K1, fourier_shift
from vidmag.params import PIPELINE_PARAMETERS, make_plan

TINY = dict(size=64, frames=32, motions=(0.05, 0.5), noises=(0.1, 10.0), alphas=(5.0, 20.0))


@pytest.fixture(scope="module")
def scene():
    return protocol_module.texture(64, seed=0)


# --- metrics

def test_identical_images_give_psnr_inf_and_ssim_one(scene):
    assert psnr(scene, scene) == math.inf
    assert ssim(scene, scene) == pytest.approx(1.0, abs=1e-12)


def test_psnr_of_a_known_error_is_the_formula(scene):
    # a constant error c: MSE = c^2 exactly
    assert psnr(scene + 3.0, scene) == pytest.approx(10 * math.log10(PEAK**2 / 9.0), abs=1e-9)
    # Gaussian noise of sigma 2: 20 log10(255 / 2) within the sampling error of the MSE of 4096 samples
    # (relative standard error sqrt(2 / 4096) = 2.2 %, 0.1 dB; 0.3 dB is three of them)
    noisy = scene + np.random.default_rng(1).normal(0, 2.0, scene.shape)
    assert psnr(noisy, scene) == pytest.approx(20 * math.log10(PEAK / 2.0), abs=0.3)


def test_ssim_of_two_flat_images_is_the_luminance_term():
    # no variance: the contrast-structure term is C2 / C2 = 1, SSIM = (2ab + C1) / (a^2 + b^2 + C1)
    a, b = np.full((32, 32), 100.0), np.full((32, 32), 120.0)
    c1 = (SSIM_K1 * PEAK) ** 2
    assert ssim(a, b) == pytest.approx((2 * 100 * 120 + c1) / (100**2 + 120**2 + c1), rel=1e-12)


def test_metrics_refuse_mismatched_images(scene):
    with pytest.raises(ValueError, match="psnr"):
        psnr(scene, scene[:10])
    with pytest.raises(ValueError, match="at least 11"):
        ssim(np.zeros((8, 8)), np.zeros((8, 8)))


@pytest.mark.parametrize("shift", [0.04, 0.5, 3.3, -7.8])
def test_measure_shift_recovers_an_exact_translation(scene, shift):
    dx, dy = measure_shift(fourier_shift(scene, shift, 0.0), scene, margin=4)
    assert dx == pytest.approx(shift, abs=1e-6)
    assert dy == pytest.approx(0.0, abs=1e-6)


def test_measure_shift_ignores_a_change_of_contrast(scene):
    dx, _ = measure_shift(1.7 * fourier_shift(scene, 0.3, 0.0) - 40, scene, margin=4)
    assert dx == pytest.approx(0.3, abs=1e-6)


# --- the protocol

def test_protocol_band_passes_the_motion_in_phase():
    p = protocol_module.make_protocol(64, 40)
    assert p.fl < p.f < p.fh < p.fs / 2
    omega = 2 * math.pi * p.f / p.fs
    iir = protocol_module._iir_response(p.r1, p.r2, omega)
    assert abs(math.atan2(iir.imag, iir.real)) < 1e-9  # solved for zero phase
    assert 0 < p.r2 < p.r1 <= 1
    assert 0 < p.warmup <= p.frames // 2
    assert p.f * p.frames / p.fs == pytest.approx(round(p.f * p.frames / p.fs))  # whole periods


def test_every_pipeline_of_the_table_gets_parameters_it_accepts():
    # the protocol takes its pipelines from the parameter table: new pipelines join it without a change here
    p = protocol_module.make_protocol(64, 40)
    assert protocol_module.check_pipelines(None) == tuple(PIPELINE_PARAMETERS)
    for name in PIPELINE_PARAMETERS:
        params = protocol_module.evaluation_parameters(name, p, 20.0)
        assert params["alpha"] == pytest.approx(19.0 / p.gain(name))
        make_plan(name, fs=p.fs, compat=None, params=params, frame_shape=(64, 64, 3), n_frames=40)


def test_a_parameter_without_value_skips_the_pipeline(monkeypatch):
    monkeypatch.setitem(PIPELINE_PARAMETERS, "mystery_ideal", ("alpha", "wobble"))
    report = synthetic_report(["mystery_ideal"], size=32, frames=20, motions=(0.1,), noises=(1.0,),
                              alphas=(5.0,))
    assert "wobble" in report.skipped["mystery_ideal"]
    assert report.pipelines() == ["input"]


def test_a_pipeline_the_backend_does_not_run_is_skipped(monkeypatch):
    # which backend runs which pipeline changes as backends grow: a stand-in backend refuses one pipeline
    import vidmag.pipelines
    from vidmag.backend.registry import BackendUnavailableError

    real = vidmag.pipelines.magnify

    def magnify(frames, *, pipeline, **kwargs):
        if pipeline == "laplacian_ideal":
            raise BackendUnavailableError("backend 'stand-in' does not run laplacian_ideal")
        return real(frames, pipeline=pipeline, **kwargs)

    monkeypatch.setattr(vidmag.pipelines, "magnify", magnify)
    report = synthetic_report(["laplacian_ideal", "laplacian_iir"], size=32, frames=20, motions=(0.1,),
                              noises=(1.0,), alphas=(5.0,))
    assert "stand-in" in report.skipped["laplacian_ideal"]
    assert report.pipelines() == ["input", "laplacian_iir"]


def test_measured_magnification_of_the_ground_truth_is_the_requested_one(scene):
    # no pipeline: the ground truth itself (8-bit, as a pipeline's output) must measure as M within 2 %
    p = protocol_module.make_protocol(64, 40)
    t = np.arange(p.frames) / p.fs
    for motion, m in ((0.04, 5.0), (0.05, 20.0), (1.0, 10.0)):
        truth = m * motion * np.sin(2 * np.pi * p.f * t)
        frames = protocol_module.clip(scene, truth)
        expected = protocol_module.ground_truth(scene, truth, p)
        _, _, measured, phase, _ = protocol_module.score(frames, scene, expected, p, motion)
        assert measured == pytest.approx(m, rel=0.02)
        assert abs(phase) < 1.0


def _linear_prediction(scene: np.ndarray, p, alpha: float) -> float:
    """1 + g <P(dS/dx), dS/dx> / <dS/dx, dS/dx>: the magnification a Laplacian pipeline gives a small motion.

    To first order a motion d moves the scene S by -d dS/dx; the pipeline adds g P(-d dS/dx), P the pyramid
    with its per-level gains (linear), g the temporal gain. Measured as a translation against dS/dx (least
    squares), the added part is g <P(dS/dx), dS/dx> / |dS/dx|^2 times d.
    """
    from vidmag._reference.gains import level_gains
    from vidmag._reference.pyramid import build_laplacian, collapse_laplacian, pyramid_levels

    n = scene.shape[0]
    kx = np.fft.fftfreq(n)[None, :]
    dx = np.real(np.fft.ifft2(np.fft.fft2(scene) * 2j * np.pi * kx))
    levels = pyramid_levels(n, n)
    gains = level_gains(n, n, levels, alpha, protocol_module.LAMBDA_C)
    bands = build_laplacian(dx[..., None], levels)
    amplified = collapse_laplacian([b * g for b, g in zip(bands, gains)])[..., 0]
    inner = (slice(p.margin, n - p.margin),) * 2
    return 1 + p.gain("laplacian_butterworth") * float(
        np.sum(amplified[inner] * dx[inner]) / np.sum(dx[inner] ** 2))


def test_laplacian_butterworth_magnifies_a_small_motion_as_the_linear_theory_says(scene):
    report = synthetic_report(["laplacian_butterworth"], size=64, frames=40, motions=(0.05,),
                              noises=(0.0,), alphas=(10.0,))
    case = report.select(pipeline="laplacian_butterworth", test="motion")[0]
    p = protocol_module.make_protocol(64, 40)
    predicted = _linear_prediction(scene, p, case.alpha)
    # 5 %: the filters' start-up left after the warm-up (the slow pole's e^-3 of an error of a sixth of the
    # motion, 1 %), 8-bit rounding of a 0.05 px motion (a few tenths of a grey level per pixel) and the second
    # order of the expansion at 0.5 px of magnified motion on 16 px and longer wavelengths (about 1 %)
    assert case.measured == pytest.approx(predicted, rel=0.05)
    # the finest and coarsest levels are never amplified: below M, but within 20 % of it on this texture
    assert case.measured == pytest.approx(10.0, rel=0.2)
    assert abs(case.phase) < 5.0


def test_tiny_protocol_gives_finite_numbers_table_json_and_plot(tmp_path):
    report = synthetic_report(["laplacian_butterworth", "gaussian_ideal"], **TINY)
    assert len(report.cases) == 3 * (2 + 2) * 2  # input and two pipelines, 4 clips, 2 magnifications
    for case in report.cases:
        assert math.isfinite(case.psnr) and math.isfinite(case.ssim) and math.isfinite(case.measured)
        assert -1 <= case.ssim <= 1
    assert {c.kind for c in report.cases} == {"input", "motion", "colour"}
    text = report.table(full=True)
    assert "laplacian_butterworth" in text and "every case" in text
    data = json.loads(report.to_json())
    assert data["protocol"]["size"] == 64 and len(data["cases"]) == len(report.cases)
    path = tmp_path / "plots.png"
    report.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_protocol_refuses_bad_settings():
    with pytest.raises(ValueError, match="pipelines"):
        synthetic_report(["nope"])
    with pytest.raises(ValueError, match="size"):
        synthetic_report(size=8)
    with pytest.raises(ValueError, match="motions"):
        synthetic_report(motions=(0.0,))
    with pytest.raises(ValueError, match="alphas"):
        synthetic_report(alphas=(0.5,))
    with pytest.raises(TypeError, match="noises"):
        synthetic_report(noises="1")


# --- the clip report

def _clip(T=40, H=32, W=32, seed=0):
    rng = np.random.default_rng(seed)
    _, xx = np.mgrid[0:H, 0:W]
    frames = np.empty((T, H, W, 3), dtype=np.uint8)
    for t in range(T):
        grey = 128 + 40 * np.sin((xx + 0.3 * np.sin(2 * np.pi * 2 * t / 30)) / 3) + rng.normal(0, 1.0, (H, W))
        frames[t] = np.clip(np.round(grey), 0, 255).astype(np.uint8)[..., None]
    return frames


IIR = dict(pipeline="laplacian_iir", alpha=10, lambda_c=8, r1=0.4, r2=0.05, chrom_attenuation=0.1)


def test_clip_report_measures_noise_flicker_and_clipping():
    report = clip_report(_clip(), fs=30, backend="cpu", **IIR)
    assert report.frames == 40 and report.pipeline == "laplacian_iir"
    assert report.noise_amplification > 1  # the pipeline amplifies the noise in its band
    assert math.isfinite(report.flicker_ratio) and 0 <= report.output_clipped <= 1
    assert "static region" in report.table()
    assert json.loads(report.to_json())["static_pixels"] == round(0.1 * 32 * 32)


def test_clip_report_region_given_and_a_region_that_never_varies():
    frames = _clip()
    frames[:, :8, :8] = 77  # a flat, unchanging corner
    report = clip_report(frames, fs=30, backend="cpu", roi_static=(0, 0, 8, 8), **IIR)
    assert report.static_pixels == 64 and report.input_noise == 0
    assert math.isnan(report.noise_amplification)
    assert json.loads(report.to_json())["noise_amplification"] is None
    with pytest.raises(ValueError, match="roi_static"):
        clip_report(frames, fs=30, backend="cpu", roi_static=(30, 0, 8, 8), **IIR)
    with pytest.raises(TypeError, match="fs"):
        clip_report(frames, backend="cpu", **IIR)


@pytest.mark.parametrize("bad", [None, 3, {"clip": 1}, object()], ids=["None", "int", "dict", "object"])
def test_a_clip_of_the_wrong_type_is_a_type_error_naming_clip(bad):
    # issue 19: clip_report(None) was a ValueError ending in "got object ()"
    takes = r"must be a video path \(str, bytes or os\.PathLike\) or uint8 frames \(T, H, W, 3\)"
    with pytest.raises(TypeError, match=rf"^clip {takes}, got {type(bad).__name__} "):
        clip_report(bad, fs=30, backend="cpu", **IIR)
    with pytest.raises(ValueError, match=rf"^clip {takes}, got float64 "):
        clip_report(_clip().astype(float), fs=30, backend="cpu", **IIR)


# --- the command

def _write_clip(path, frames, fs=30):
    # H.264 through the library's own writer (yuv420p, as a camera's file would be)
    with io.VideoWriter(path, width=frames.shape[2], height=frames.shape[1], fps=Fraction(fs)) as writer:
        for frame in frames:
            writer.write(frame)


def test_command_runs_the_quick_protocol(tmp_path, capsys):
    out = tmp_path / "eval"
    code = main(["evaluate", "--quick", "--pipelines", "laplacian_iir", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert "laplacian_iir" in stdout and "measured M" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["plots.png", "report.json", "table.txt"]
    assert json.loads((out / "report.json").read_text())["protocol"]["size"] == 64


def test_command_reports_a_clip(tmp_path, capsys):
    path = tmp_path / "clip.mp4"
    _write_clip(path, _clip(T=30))
    out = tmp_path / "clip-eval"
    code = main(["evaluate", str(path), "--pipeline", "laplacian_iir", "--alpha", "10", "--lambda-c", "8",
                 "--r1", "0.4", "--r2", "0.05", "--chrom-attenuation", "0.1", "--backend", "cpu",
                 "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0 and "static-region noise" in stdout
    assert json.loads((out / "report.json").read_text())["frames"] == 30
    assert (out / "table.txt").read_text().startswith("clip ")


@pytest.mark.parametrize("argv, named", [
    (["--pipelines", "laplacian_iir,nope"], "--pipelines"),
    (["--alpha", "3"], "--alpha"),
    (["--roi-static", "0,0,4,4"], "--roi-static"),
    (["CLIP", "--quick"], "--quick"),
    (["CLIP"], "--preset"),
    (["--size", "x"], "--size"),
])
def test_command_bad_options_exit_2_naming_them(tmp_path, capsys, argv, named):
    argv = [str(tmp_path / "clip.mp4") if a == "CLIP" else a for a in argv]
    code = main(["evaluate", *argv, "--out", str(tmp_path / "never")])
    err = capsys.readouterr().err
    assert code == 2 and named in err
    assert not (tmp_path / "never").exists()
