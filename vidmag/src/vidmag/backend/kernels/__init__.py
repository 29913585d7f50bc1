"""The kernels written once and the host code that drives them, for every device kernelkit runs.

- :mod:`~vidmag.backend.kernels.templates`: the kernel templates, emitted through kernelkit's dialects as
  GLSL (vulkan), CUDA C++ (cuda), MSL (metal) and OpenCL C (the build CI runs on PoCL to check the arithmetic
  the other targets share);
- :mod:`~vidmag.backend.kernels.device`: :class:`~vidmag.backend.kernels.device.KernelDevice`, what a device
  layer provides (arrays, launches, scratch arrays, tables), and its arrays;
- :mod:`~vidmag.backend.kernels.operations` and :mod:`~vidmag.backend.kernels.fused`: the primitives and the
  fused tier of the backend contract over any such device.

A backend over a kernelkit runtime is then a device module (a :class:`KernelDevice` subclass: how host arrays
get in and out, whether launches are batched) and a ``create()`` binding these two tiers to it. Importing this
package imports no device library.
"""
