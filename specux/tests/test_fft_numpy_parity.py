"""specux.fft against numpy.fft (and the definition in specux._reference.fft) on the cpu backend."""

from __future__ import annotations

import numpy as np
import pytest

import specux
import specux.fft as sfft
from specux._reference import fft as ref

NORMS = [None, "backward", "ortho", "forward"]
SIZES = [*range(1, 65), 97, 127, 131, 256, 509, 1024, 1031, 4096]
rng = np.random.default_rng(1234)


def _c(shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_one_dimensional_every_size_and_norm(dtype, compare):
    cdtype = np.result_type(dtype, np.complex64)
    for n in SIZES:
        x = rng.standard_normal((3, n)).astype(dtype)
        z = _c((3, n), cdtype)
        for norm in NORMS:
            for name, arg in (("fft", z), ("ifft", z), ("rfft", x), ("ihfft", x)):
                got = getattr(sfft, name)(arg, norm=norm, backend="cpu")
                want = getattr(np.fft, name)(arg, norm=norm)
                assert got.dtype == want.dtype, (name, n, got.dtype, want.dtype)
                compare("fft", "numpy.fft", got, want, dtype=dtype)
            half = _c((3, n // 2 + 1), cdtype)
            for name in ("irfft", "hfft"):
                got = getattr(sfft, name)(half, n=n, norm=norm, backend="cpu")
                want = getattr(np.fft, name)(half, n=n, norm=norm)
                assert got.dtype == want.dtype and got.shape == want.shape
                compare("fft", "numpy.fft", got, want, dtype=dtype)


def test_against_the_definition(compare):
    for n in [1, 2, 3, 5, 7, 12, 17, 31, 64]:
        z = _c((2, n))
        compare("fft", "definition (DFT matrix)", sfft.fft(z), ref.dft(z))
        compare("fft", "definition (DFT matrix)", sfft.ifft(z, norm="forward"), ref.dft(z, inverse=True))
        x = z.real.copy()
        compare("fft", "definition (DFT matrix)", sfft.rfft(x), ref.rdft(x))
        h = ref.rdft(x)
        compare("fft", "definition (DFT matrix)", sfft.irfft(h, n=n, norm="forward"), ref.irdft(h, n))


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_axes_and_n_padding_or_truncation(axis, compare):
    x = rng.standard_normal((6, 10, 4))
    for n in (None, 1, 3, 6, 10, 17):
        for name in ("fft", "ifft", "rfft", "ihfft"):
            compare(
                "fft",
                "numpy.fft",
                getattr(sfft, name)(x, n=n, axis=axis),
                getattr(np.fft, name)(x, n=n, axis=axis),
            )
        for name in ("irfft", "hfft"):
            z = _c(x.shape)
            compare(
                "fft",
                "numpy.fft",
                getattr(sfft, name)(z, n=n, axis=axis),
                getattr(np.fft, name)(z, n=n, axis=axis),
            )


@pytest.mark.parametrize("norm", NORMS)
def test_multidimensional(norm, compare):
    x = rng.standard_normal((3, 5, 6, 7))
    z = _c((3, 5, 6, 7))
    cases = [
        dict(),
        dict(axes=(0, 2)),
        dict(s=(4, 9)),
        dict(s=(4, 9), axes=(1, 3)),
        dict(axes=(-1, 0, 2)),
        dict(s=(-1, 3), axes=(2, 1)),
    ]
    for kw in cases:
        # numpy 2 deprecates s without axes; specux keeps numpy's rule (the last len(s) axes)
        npkw = dict(kw, axes=tuple(range(-len(kw["s"]), 0))) if "s" in kw and "axes" not in kw else kw
        for name, arg in (("fftn", z), ("ifftn", z), ("rfftn", x)):
            got = getattr(sfft, name)(arg, norm=norm, **kw)
            compare("fft", "numpy.fft", got, getattr(np.fft, name)(arg, norm=norm, **npkw))
        spec = np.fft.rfftn(x, axes=npkw.get("axes"))
        compare(
            "fft", "numpy.fft", sfft.irfftn(spec, norm=norm, **kw), np.fft.irfftn(spec, norm=norm, **npkw)
        )
    for name, arg in (("fft2", z), ("ifft2", z), ("rfft2", x)):
        compare(
            "fft", "numpy.fft", getattr(sfft, name)(arg, norm=norm), getattr(np.fft, name)(arg, norm=norm)
        )
        compare(
            "fft",
            "numpy.fft",
            getattr(sfft, name)(arg, s=(3, 8), axes=(0, 3), norm=norm),
            getattr(np.fft, name)(arg, s=(3, 8), axes=(0, 3), norm=norm),
        )
    spec = np.fft.rfft2(x)
    compare(
        "fft", "numpy.fft", sfft.irfft2(spec, s=(6, 7), norm=norm), np.fft.irfft2(spec, s=(6, 7), norm=norm)
    )


def test_frequencies_and_shifts():
    for n in (1, 2, 7, 8):
        np.testing.assert_array_equal(sfft.fftfreq(n, 0.1), np.fft.fftfreq(n, 0.1))
        np.testing.assert_array_equal(sfft.rfftfreq(n, 0.1), np.fft.rfftfreq(n, 0.1))
    x = np.arange(35).reshape(5, 7)
    for axes in (None, 0, 1, (0, 1), (-1,)):
        np.testing.assert_array_equal(sfft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(sfft.ifftshift(x, axes), np.fft.ifftshift(x, axes))


def test_dtypes_follow_numpy():
    assert sfft.fft(np.ones(8, np.float32)).dtype == np.complex64
    assert sfft.rfft(np.ones(8, np.float32)).dtype == np.complex64
    assert sfft.irfft(np.ones(5, np.complex64)).dtype == np.float32
    assert sfft.fft(np.ones(8, np.int32)).dtype == np.complex128
    assert sfft.rfft(np.ones(8, bool)).dtype == np.complex128
    np.testing.assert_allclose(sfft.fft([1, 2, 3]), np.fft.fft([1, 2, 3]))


def test_bad_input_is_named():
    with pytest.raises(TypeError, match=r"float16.*accepted: float32, float64"):
        sfft.fft(np.ones(8, np.float16), backend="cpu")
    with pytest.raises(TypeError, match="must be real"):
        sfft.rfft(np.ones(8, np.complex128))
    with pytest.raises(ValueError, match="n=0"):
        sfft.fft(np.ones(8), n=0)
    with pytest.raises(ValueError, match="invalid number of FFT data points"):
        sfft.fft(np.ones((3, 0)))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        sfft.fft(np.ones((3, 4)), axis=2)
    with pytest.raises(ValueError, match="norm must be"):
        sfft.fft(np.ones(4), norm="unitary")
    with pytest.raises(ValueError, match="s and axes must have the same length"):
        sfft.fftn(np.ones((3, 4)), s=(3,), axes=(0, 1))
    with pytest.raises(ValueError, match="at least one dimension"):
        sfft.fft(np.float64(3.0))


def test_non_finite_values_propagate():
    x = rng.standard_normal((2, 16))
    x[0, 3] = np.nan
    out = sfft.fft(x)
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 12, dtype=torch.float64)
    out = specux.fft.rfft(t, n=16, norm="ortho")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.complex128
    np.testing.assert_allclose(
        out.numpy(), np.fft.rfft(t.numpy(), n=16, norm="ortho"), rtol=1e-12, atol=1e-12
    )
    t32 = torch.randn(3, 5, 8)
    out = specux.fft.fftn(t32, axes=(0, 2))
    assert out.dtype == torch.complex64
    np.testing.assert_allclose(out.numpy(), np.fft.fftn(t32.numpy(), axes=(0, 2)), rtol=1e-5, atol=1e-5)
    assert isinstance(specux.fft.fftshift(t32, axes=1), torch.Tensor)
