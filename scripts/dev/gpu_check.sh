#!/usr/bin/env bash
# One prepared check of specux's CUDA backend on a lent NVIDIA GPU (see DESIGN.md: an H200 with Python 3.12,
# torch 2.11 (CUDA 13), cupy-cuda13x, cuda-bindings and nvcc 13.0, and no network).
#
#   bash scripts/dev/gpu_check.sh            # results in $OUT (if set) or ./gpu-check-results
#
# Needs nothing downloaded: kernelkit and specux run from this checkout (PYTHONPATH), NVRTC comes from the CUDA toolkit or
# from torch's nvidia-cuda-nvrtc wheel. Steps: environment and backend report, FFT conformance on the GPU against
# numpy (numpy, torch and cupy inputs; float32 / float64 / half), CUDA gradients of the FFT ops and of the
# device ops (stft, istft, mel, mfcc, lfcc, cqt on CUDA tensors) against the CPU's, torch.compile fullgraph on
# CUDA tensors, a bitwise-repeatable backward, timings against torch.fft (cuFFT), every generated op (stft, istft, melspectrogram, mfcc, lfcc,
# fftconvolve) against backend="cpu" (numpy inputs in float32 / float64 / half storage; cupy and torch inputs
# where accepted, reported either way), then bench/specux_gpu.py --quick (specux against torch / torchaudio /
# nnAudio / cupyx, GB/s against the device's peak), then cqt: every res_type on the device against
# backend="cpu" and torch / cupy inputs (scripts/dev/cqt_device_accuracy.py --check, 60 s; `gpu_check.sh cqt`
# runs the env step and this one only).
# Budget: about nine minutes; each step has its own time limit so one hang cannot eat the whole lease.
# SPECUX_GPU_CHECK_BACKEND=opencl runs the ops and bench steps on that backend instead (to try them on PoCL:
#   python scripts/dev/gpu_check.py ops --backend opencl --out /tmp/x).
# vidmag: after specux's steps, scripts/dev/vidmag_gpu_check.py checks the cuda backend against the reference
# on crops of the sample clips (../shared/data/clips, or VIDMAG_CLIPS; synthetic stand-ins when absent) and
# times it (CUDA events, end to end from numpy, frame-at-a-time 720p / 1080p), within 150 s. The two parts
# together exceed one 10-minute command: `bash scripts/dev/gpu_check.sh vidmag` runs the env step and vidmag
# only; VIDMAG_GPU_CHECK=0 skips vidmag.
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULTS="${OUT:-$PWD/gpu-check-results}"
mkdir -p "$RESULTS"
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD/kernelkit/src:$PWD/specux/src${PYTHONPATH:+:$PYTHONPATH}"
export KERNELKIT_CACHE_DIR="$RESULTS/kernel-cache"
# NVRTC from the toolkit when cuda.pathfinder does not find the wheel
if [ -d /usr/local/cuda/lib64 ]; then export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi

{
  echo "== gpu_check $(date -u +%FT%TZ) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  nvcc --version 2>&1 | tail -1 || true
  "$PY" --version
} | tee "$RESULTS/env.txt"

status=0
# per-step limits (seconds) keep specux's steps within ten minutes of a lease (600 s in all)
declare -A LIMIT=([env]=45 [conformance]=130 [autograd]=90 [timing]=75 [ops]=120 [bench]=80 [cqt]=60)
STEPS="env conformance autograd timing ops bench cqt"
if [ "${1:-}" = vidmag ]; then STEPS=env; fi
if [ "${1:-}" = cqt ]; then STEPS="env cqt"; fi
for step in $STEPS; do
  echo "== step $step" | tee -a "$RESULTS/log.txt"
  if [ "$step" = cqt ]; then
    timeout "${LIMIT[$step]}" "$PY" scripts/dev/cqt_device_accuracy.py --backend "${SPECUX_GPU_CHECK_BACKEND:-cuda}" \
      --check --json "$RESULTS/cqt_accuracy.json" 2>&1 | tee -a "$RESULTS/log.txt"
  else
    timeout "${LIMIT[$step]}" "$PY" scripts/dev/gpu_check.py "$step" --out "$RESULTS" 2>&1 | tee -a "$RESULTS/log.txt"
  fi
  rc=${PIPESTATUS[0]}
  echo "== step $step exit $rc" | tee -a "$RESULTS/log.txt"
  if [ "$rc" -ne 0 ]; then status=1; fi
  if [ "$step" = env ] && [ "$rc" -ne 0 ]; then break; fi
done

# -- vidmag: the cuda backend against the reference, then timings ----------------------------------------------
if [ "${VIDMAG_GPU_CHECK:-1}" != 0 ] && [ "${1:-}" != cqt ]; then
  echo "== step vidmag" | tee -a "$RESULTS/log.txt"
  PYTHONPATH="$PWD/vidmag/src:$PYTHONPATH" timeout 150 "$PY" scripts/dev/vidmag_gpu_check.py --out "$RESULTS" \
    --clips "${VIDMAG_CLIPS:-$PWD/../shared/data/clips}" 2>&1 | tee -a "$RESULTS/log.txt"
  rc=${PIPESTATUS[0]}
  echo "== step vidmag exit $rc" | tee -a "$RESULTS/log.txt"
  if [ "$rc" -ne 0 ]; then status=1; fi
fi
exit $status
