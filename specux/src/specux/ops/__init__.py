"""The public fronts, one module per transform family: each function's signature, docstring, argument checks
(:mod:`specux._spec`) and one dispatch call. The CPU kernels live in :mod:`specux._backends.cpu`; the
host-only tuning estimate (:mod:`.tuning`) still computes in its front."""
