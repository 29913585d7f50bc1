"""The torch backend's own promises: results stay tensors, torch imported only on demand, precise reasons."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import vidmag

PARAMS = dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5)


@pytest.fixture
def torch_ops(require_backend):
    _, backend = require_backend("torch")
    return backend.operations


def test_magnify_tensor_returns_a_tensor_on_the_input_device(torch_ops, clip):
    import torch

    from vidmag.backend.torch import magnify_tensor

    frames = torch.from_numpy(clip)
    for pipeline, params in [
        ("laplacian_iir", PARAMS),
        ("gaussian_ideal", dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=0.5)),
    ]:
        for compat in (None, "mit"):
            out = magnify_tensor(frames, fs=30.0, pipeline=pipeline, compat=compat, **params)
            assert isinstance(out, torch.Tensor) and out.dtype == torch.uint8 and out.device == frames.device
            expected = vidmag.magnify(
                clip, fs=30.0, pipeline=pipeline, backend="cpu", compat=compat, **params
            )
            assert tuple(out.shape) == expected.shape
            assert np.abs(out.numpy().astype(np.int16) - expected.astype(np.int16)).max() <= 1


def test_magnify_routes_a_tensor_to_the_torch_backend_and_returns_a_tensor(torch_ops, clip):
    import torch

    from vidmag.backend.torch import magnify_tensor

    frames = torch.from_numpy(clip)
    for backend in ("auto", "torch"):
        out = vidmag.magnify(frames, fs=30.0, pipeline="laplacian_iir", backend=backend, **PARAMS)
        assert isinstance(out, torch.Tensor) and out.dtype == torch.uint8
        assert torch.equal(out, magnify_tensor(frames, fs=30.0, pipeline="laplacian_iir", **PARAMS))


def test_magnify_takes_a_cpu_tensor_on_another_backend_and_returns_numpy(torch_ops, clip):
    import torch

    out = vidmag.magnify(torch.from_numpy(clip), fs=30.0, pipeline="laplacian_iir", backend="cpu", **PARAMS)
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu", **PARAMS)
    assert isinstance(out, np.ndarray) and np.array_equal(out, expected)


def test_magnify_refuses_to_copy_a_device_tensor_through_the_host(torch_ops, clip):
    import torch

    class FakeCudaTensor(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda", 0)

    frames = torch.from_numpy(clip).as_subclass(FakeCudaTensor)
    with pytest.raises(ValueError, match="backend='torch'"):
        vidmag.magnify(frames, fs=30.0, pipeline="laplacian_iir", backend="cpu", **PARAMS)


def test_magnify_tensor_float_input_is_quantised_like_magnify(torch_ops, clip):
    import torch

    from vidmag.backend.torch import magnify_tensor

    as_float = clip.astype(np.float32) / 255.0
    a = magnify_tensor(torch.from_numpy(as_float), fs=30.0, pipeline="laplacian_iir", **PARAMS)
    b = magnify_tensor(torch.from_numpy(clip), fs=30.0, pipeline="laplacian_iir", **PARAMS)
    assert torch.equal(a, b)


def test_magnify_tensor_rejects_bad_input(torch_ops, clip):
    import torch

    from vidmag.backend.torch import magnify_tensor

    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        magnify_tensor(clip, fs=30.0, pipeline="laplacian_iir", **PARAMS)
    with pytest.raises(ValueError, match=r"\(T, H, W, 3\)"):
        magnify_tensor(torch.zeros(4, 16, 16), fs=30.0, pipeline="laplacian_iir", **PARAMS)
    with pytest.raises(ValueError, match="within"):
        magnify_tensor(torch.full((4, 16, 16, 3), 2.0), fs=30.0, pipeline="laplacian_iir", **PARAMS)
    with pytest.raises(TypeError, match="r1"):
        magnify_tensor(
            torch.from_numpy(clip),
            fs=30.0,
            pipeline="laplacian_iir",
            alpha=1.0,
            lambda_c=8.0,
            r2=0.05,
            chrom_attenuation=0.5,
        )


def test_importing_vidmag_and_probing_other_backends_does_not_import_torch():
    code = (
        "import sys, vidmag, vidmag.backend\n"
        "from vidmag.backend import registry\n"
        "[registry.unavailable_reason(n) for n in registry.names() if n != 'torch']\n"
        "import vidmag.backend.torch\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_probe_names_the_missing_extra(monkeypatch):
    from vidmag.backend import torch as torch_backend

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    assert torch_backend.probe() == "torch is not installed (pip install torch)"


def test_probe_reports_an_absent_device(monkeypatch, torch_ops):
    from vidmag.backend import torch as torch_backend

    monkeypatch.setenv(torch_backend.DEVICE_ENV, "no-such-device")
    reason = torch_backend.probe()
    assert reason is not None and reason.startswith("torch cannot run here")
