"""Backends of specux: the registry (:mod:`.registry`), the contract (:mod:`.base`), the CPU backend (the
package :mod:`.cpu`: its NumPy kernels and their adjoints) and one module per device backend."""
