"""Filter banks and windows (pure NumPy / SciPy, memoised); the public names are re-exported by
specux.filters."""
