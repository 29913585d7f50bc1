"""Backends of specux: the registry (:mod:`.registry`), the contract (:mod:`.base`) and one module per
backend."""
