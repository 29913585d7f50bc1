"""The NumPy reference: one plain, obviously correct function per operation (the oracle every backend is
checked against). Written for clarity, not speed: loops over frames, numpy.fft, float64 filter banks."""
