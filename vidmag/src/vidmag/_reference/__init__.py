"""The NumPy reference of vidmag: float64 maths written to be obviously correct.

Every function here follows one fact of SPEC-vidmag.md and is what the tests check against those facts;
every backend is checked against the results these functions give. Modules:

- ``colour``: RGB <-> YIQ and the MIT output handling (clamp, hue-keeping normalisation, rounding).
- ``pyramid``: the binomial Laplacian pyramid (build, collapse, level count) and the Gaussian down stack.
- ``resize``: the bicubic ``imresize`` of Octave (Keys a = -0.5, half-sample mirror).
- ``temporal``: the ideal band-pass, the first-order Butterworth and IIR low-pass steps.
- ``gains``: the per-level gains of the Laplacian pipelines.
- ``pipelines``: the four pipelines on a whole clip in memory, the plainest statement of what they compute
  (a test oracle; the library itself runs them through ``vidmag.backend``).
"""
