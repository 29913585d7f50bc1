#!/usr/bin/env bash
# torchaudio is a test-only oracle (LFCC, MelSpectrogram / MFCC presets). Its wheels pin one torch release and
# carry C++ extensions built against CUDA; no release matches the CPU torch this project installs. We only use
# its pure-Python transforms, so install it without dependencies and remove the compiled extensions: torchaudio
# then imports in pure-Python mode (its loader skips libraries that are absent).
set -euo pipefail
PY=${1:-.venv/bin/python}
"$PY" -m pip install -q --no-deps "torchaudio==2.11.1"
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site"/torchaudio/lib/*.so
"$PY" -c 'import torchaudio.transforms as T, torch; T.LFCC()(torch.zeros(400))' 2>/dev/null
