"""Time the block choices of stft's generated kernels on a device (docs/specux/gpu.md, op-level plans).

Runs ``specux.autotune_op("stft", (16, 160000), n_fft=512)`` for the complex and the magnitude output and
prints, per block, the best device time per call; the winners are stored in the tuning file of
``KERNELKIT_CACHE_DIR`` (point it at a scratch directory to keep yours). Usage::

    python scripts/dev/op_autotune_measure.py [--backend opencl] [--repeat 7]
"""

from __future__ import annotations

import argparse

import specux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="opencl", choices=["opencl", "cuda", "metal"])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for output in ("complex", "magnitude"):
        report = specux.autotune_op(
            "stft",
            (16, 160000),
            "float32",
            backend=args.backend,
            repeat=args.repeat,
            n_fft=512,
            output=output,
        )
        times = ", ".join(f"{c['block']}: {c['seconds'] * 1e3:.1f} ms" for c in report["candidates"])
        same = all(c["identical"] for c in report["candidates"])
        print(
            f"stft 16 x 160000 n_fft=512 {output}: {times}; chosen {report['chosen']['block']}; "
            f"bit-identical: {same}"
        )


if __name__ == "__main__":
    main()
