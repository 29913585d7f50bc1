// Temporal filters. Time is the leading axis; p indexes everything else (pixels x channels).
// Global sizes are exact; no bounds checks (see resample.cl).

// One step of a first-order filter on a level state, y' = c_y y + c_x x + c_xp x_prev. The IIR low-pass is
// (1 - r, r, 0); the Butterworth low-pass (-a1 / a0, b0 / a0, b1 / a0).
__kernel void first_order_step(__global const float* y, __global const float* x, __global const float* xp,
                               __global float* dst, const float c_y, const float c_x, const float c_xp)
{
    const long i = get_global_id(0);
    dst[i] = c_y * y[i] + c_x * x[i] + c_xp * xp[i];
}

// A run of frames through two first-order low-passes at once (the streaming pipelines' temporal filter),
// one work item per sample of a band, looping over time: x is (t, p) and is overwritten with
// gain * (lp1 - lp2); s1, s2 (p) are the low-pass states and xp (p) the previous input, all carried over to the
// next run. Coefficients as in first_order_step; gain is per channel (Y, I, Q).
__kernel void first_order_scan(__global float* x, __global float* s1, __global float* s2, __global float* xp,
                               const int t_len, const long p_len,
                               const float c1_y, const float c1_x, const float c1_xp,
                               const float c2_y, const float c2_x, const float c2_xp,
                               const float g0, const float g1, const float g2)
{
    const long p = get_global_id(0);
    const int c = (int)(p % 3);
    const float g = c == 0 ? g0 : (c == 1 ? g1 : g2);
    float a = s1[p], b = s2[p], prev = xp[p];
    for (int t = 0; t < t_len; ++t) {
        const float v = x[t * p_len + p];
        a = c1_y * a + c1_x * v + c1_xp * prev;
        b = c2_y * b + c2_x * v + c2_xp * prev;
        prev = v;
        x[t * p_len + p] = g * (a - b);
    }
    s1[p] = a;
    s2[p] = b;
    xp[p] = prev;
}

// The ideal band-pass as a projection onto DFT bins (see vidmag.backend.bandpass_basis), in two passes.
// With d = x - x[0] per series: coefficients (m, p) = analysis^T (m, t) d (t, p).
__kernel void project_coefficients(__global const float* x, __global const float* analysis,
                                   __global float* coef, const int t_len, const int m_len, const long p_len)
{
    const long p = get_global_id(0);
    const int m = get_global_id(1);
    const float x0 = x[p];
    float acc = 0.0f;
    for (int t = 0; t < t_len; ++t) acc += analysis[t * m_len + m] * (x[t * p_len + p] - x0);
    coef[m * p_len + p] = acc;
}

// out (t, p) = gain_c * (identity d + synthesis (t, m) coefficients (m, p) + keeps_dc x[0]), gain per channel
// (c = p mod 3). out must not be x: every work item of a series reads x[0].
__kernel void project_synthesis(__global const float* x, __global const float* coef,
                                __global const float* synthesis, __global float* out,
                                const int t_len, const int m_len, const long p_len,
                                const float identity, const float keeps_dc,
                                const float g0, const float g1, const float g2)
{
    const long p = get_global_id(0);
    const int t = get_global_id(1);
    const int c = (int)(p % 3);
    const float g = c == 0 ? g0 : (c == 1 ? g1 : g2);
    const float x0 = x[p];
    float acc = identity * (x[t * p_len + p] - x0) + keeps_dc * x0;
    for (int m = 0; m < m_len; ++m) acc += synthesis[t * m_len + m] * (coef[m * p_len + p]);
    out[t * p_len + p] = g * acc;
}

// first_order_scan of temporal.cl on 8 consecutive samples per work item, one gain for all channels (the
// streaming pipelines' use). Covers samples [0, 8 * global size); the host runs the scalar kernel on the rest.
__kernel void first_order_scan8(__global float* x, __global float* s1, __global float* s2,
                                __global float* xp, const int t_len, const long p_len,
                                const float c1_y, const float c1_x, const float c1_xp,
                                const float c2_y, const float c2_x, const float c2_xp, const float g)
{
    const long p = get_global_id(0) * 8;
    float8 a = LD8(s1 + p, 0), b = LD8(s2 + p, 0), prev = LD8(xp + p, 0);
    for (int t = 0; t < t_len; ++t) {
        __global float* row = x + t * p_len + p;
        const float8 v = LD8(row, 0);
        a = c1_y * a + c1_x * v + c1_xp * prev;
        b = c2_y * b + c2_x * v + c2_xp * prev;
        prev = v;
        ST8(g * (a - b), row, 0);
    }
    ST8(a, s1 + p, 0);
    ST8(b, s2 + p, 0);
    ST8(prev, xp + p, 0);
}
