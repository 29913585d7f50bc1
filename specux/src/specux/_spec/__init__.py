"""Validation of each transform's arguments into its frozen parameters object (the ``*Params`` classes of
:mod:`specux._validate`): one module per family, shared by the public fronts (:mod:`specux.ops`), the torch
ops (:mod:`specux.torch`, which never import the fronts) and the dask wrappers. Each function raises
``TypeError`` / ``ValueError`` naming the public function and the parameter."""
