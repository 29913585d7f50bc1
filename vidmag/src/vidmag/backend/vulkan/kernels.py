"""The vulkan backend's kernels: the templates written once (:mod:`vidmag.backend.kernels.templates`), emitted
as GLSL 4.50 compute shaders through kernelkit's GLSL dialect.

The dialect writes the bindings (one storage buffer per pointer parameter, in order) and the push-constant
block of the scalars, with the offsets the Vulkan runtime packs them at, so the two cannot disagree.
"""

from __future__ import annotations

from kernelkit.dialects import GLSL
from kernelkit.program import Program
from vidmag.backend.kernels import templates
from vidmag.backend.kernels.templates import GROUP, KERNELS

__all__ = ["GROUP", "KERNELS", "program"]


def program(name: str) -> Program:
    """Kernel ``name`` (a key of :data:`KERNELS`) as a GLSL Program of one compute shader."""
    return templates.program(name, GLSL)
