"""Each specux torch op's scalar arguments are spelled once, in its annotated signature: the OpArguments read
from it must be the arguments of every op registered from it (forward, backward, device), in order."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from specux.torch import _ops_cq, _ops_device, _ops_features, _ops_stft, _route  # noqa: E402
from specux.torch._params import OpArguments  # noqa: E402

#: op -> its arguments object (the ops registered from the same signature follow from the name)
ARGUMENTS = {
    "stft": _ops_stft.STFT_ARGS,
    "stft_frames": _ops_stft.STFT_ARGS,
    "istft": _ops_stft.ISTFT_ARGS,
    "melspectrogram": _ops_features.MEL_ARGS,
    "mfcc": _ops_features.MFCC_ARGS,
    "lfcc": _ops_features.LFCC_ARGS,
    "vqt": _ops_cq.VQT_ARGS,
    "cqt": _ops_cq.CQT_ARGS,
    "chroma_stft": _ops_cq.CHROMA_STFT_ARGS,
    "chroma_cqt": _ops_cq.CHROMA_CQT_ARGS,
}


def _schema_names(name: str) -> list[str]:
    return [a.name for a in getattr(torch.ops.specux, name).default._schema.arguments]


@pytest.mark.parametrize("op", sorted(ARGUMENTS))
def test_arguments_are_the_schemas(op: str) -> None:
    args = ARGUMENTS[op]
    assert tuple(_schema_names(op)[args.n_leading :]) == args.names
    if hasattr(torch.ops.specux, f"{op}_backward"):  # cqt and stft_frames differentiate through others'
        assert tuple(_schema_names(f"{op}_backward")[1 + args.n_leading :]) == args.names
    if op in _ops_device.OPS:
        device = _schema_names(f"{op}_device")
        assert tuple(device[args.n_leading : -1]) == args.names and device[-1] == "backend"


def test_public_names_differ_only_where_the_op_renames() -> None:
    renamed = {
        op: {n: p for n, p in zip(a.names, a.public) if n != p} for op, a in ARGUMENTS.items()
    }
    assert {op: r for op, r in renamed.items() if r} == {"mfcc": {"dct_norm": "norm"}}


@pytest.mark.parametrize("op", ["stft", "istft", "melspectrogram", "mfcc", "lfcc", "vqt", "cqt"])
def test_routes_declare_every_argument(op: str) -> None:
    import inspect

    route = list(inspect.signature(_route._PUBLIC[op]).parameters)
    assert set(ARGUMENTS[op].public) <= set(route)


def test_positional_hands_on_the_leading_arguments_and_names_the_rest() -> None:
    def signature(y: torch.Tensor, spec: str, sr: float, top_db: float | None, n: int) -> torch.Tensor:
        raise AssertionError

    args = OpArguments.of(signature, 2, public={"top_db": "db"})
    assert args.names == ("sr", "top_db", "n") and args.public == ("sr", "db", "n")
    seen = args.positional(lambda y, spec, **kw: (y, spec, kw))("Y", "S", 1.0, None, 3)
    assert seen == ("Y", "S", {"sr": 1.0, "top_db": None, "n": 3})
    values = {"sr": 8000, "db": 80, "n": 3, "other": 0}
    assert args.passed(values) == (8000.0, 80.0, 3)
    assert [type(v) for v in args.passed(values)] == [float, float, int]
    assert args.ordered(values) == (8000, 80, 3)
    assert args.from_public(values) == {"sr": 8000, "top_db": 80, "n": 3}


def test_decode_spec_names_skip_the_parse_with_the_same_result() -> None:
    """decode_spec's fast path for names gives what the literal_eval path gives."""
    import ast

    from specux.torch._params import decode_spec

    def slow(spec):
        try:
            value = ast.literal_eval(spec)
        except (ValueError, SyntaxError):
            return spec
        return value if isinstance(value, (tuple, int, float)) else spec

    for spec in ("hann", "slaney", "auto", "None", "True", "False", "kaiser", "_x", "2.0", "('kaiser', 8.0)",
                 "1", "inf", "blackmanharris", "ortho"):
        got, want = decode_spec(spec), slow(spec)
        assert got == want and type(got) is type(want), spec
