// One-axis linear maps given as tap tables (see vidmag.backend.spatial_taps): out[i] = sum_t w[i, t] in[idx[i, t]].
// Images are (n, h, w, 3), channel last. The reduce, the expand and the bicubic resize are all this one gather;
// the tables carry every border rule, so the kernels have no special cases.
// Global sizes are exact and the kernels have no bounds checks: an early return stops PoCL from vectorising
// across work items. Kernels with a fixed tap count (suffix _k3, _k4, _k5) let the compiler unroll the sum.

// Along the width: (rows, w_in, 3) -> (rows, w_out, 3), rows = n * h. Work item (x_out, row): one pixel's
// three channels, which sit next to each other in memory.
#define RESAMPLE_ROWS(NAME, IN_T, K_DECL, K)                                                          \
__kernel void NAME(__global const IN_T* src, __global float* dst,                                   \
                   __global const int* idx, __global const float* wt, K_DECL,                       \
                   const int w_in, const int w_out)                                                  \
{                                                                                                    \
    const int x = get_global_id(0);                                                                  \
    const long row = get_global_id(1);                                                               \
    __global const IN_T* line = src + row * (long)w_in * 3;                                          \
    float a = 0.0f, b = 0.0f, c = 0.0f;                                                              \
    for (int t = 0; t < K; ++t) {                                                                    \
        const int i = idx[x * K + t] * 3;                                                            \
        const float wgt = wt[x * K + t];                                                             \
        a += wgt * (float)line[i];                                                                   \
        b += wgt * (float)line[i + 1];                                                               \
        c += wgt * (float)line[i + 2];                                                               \
    }                                                                                                \
    __global float* o = dst + (row * (long)w_out + x) * 3;                                           \
    o[0] = a;                                                                                        \
    o[1] = b;                                                                                        \
    o[2] = c;                                                                                        \
}

RESAMPLE_ROWS(resample_rows_f32, float, const int k, k)
RESAMPLE_ROWS(resample_rows_u8, uchar, const int k, k)
RESAMPLE_ROWS(resample_rows_f32_k3, float, const int unused_k, 3)
RESAMPLE_ROWS(resample_rows_f32_k4, float, const int unused_k, 4)
RESAMPLE_ROWS(resample_rows_f32_k5, float, const int unused_k, 5)
RESAMPLE_ROWS(resample_rows_u8_k5, uchar, const int unused_k, 5)

// Along the height: (n, h_in, w * 3) -> (n, h_out, w * 3). Work item (x * 3 + c, y_out, frame): neighbouring
// work items read neighbouring values, so this direction vectorises well even with many taps.
// mode 0: out = map(src); mode 1: out = other + map(src); mode 2: out = other - map(src)
// (the expand that finishes a collapse step, or that forms a Laplacian band, without another pass).
#define RESAMPLE_COLS(NAME, IN_T, K_DECL, K)                                                          \
__kernel void NAME(__global const IN_T* src, __global float* dst, __global const float* other,     \
                   __global const int* idx, __global const float* wt, K_DECL,                       \
                   const int h_in, const int h_out, const int w3, const int mode)                   \
{                                                                                                    \
    const int xc = get_global_id(0);                                                                 \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    __global const IN_T* column = src + f * (long)h_in * w3 + xc;                                    \
    float acc = 0.0f;                                                                                \
    for (int t = 0; t < K; ++t) acc += wt[y * K + t] * (float)column[(long)idx[y * K + t] * w3];     \
    const long o = (f * h_out + y) * (long)w3 + xc;                                                  \
    const float base = mode == 0 ? 0.0f : other[o];                                                  \
    dst[o] = mode == 2 ? base - acc : base + acc;                                                    \
}

RESAMPLE_COLS(resample_cols_f32, float, const int k, k)
RESAMPLE_COLS(resample_cols_u8, uchar, const int k, k)
RESAMPLE_COLS(resample_cols_f32_k3, float, const int unused_k, 3)
RESAMPLE_COLS(resample_cols_f32_k4, float, const int unused_k, 4)
RESAMPLE_COLS(resample_cols_f32_k5, float, const int unused_k, 5)
RESAMPLE_COLS(resample_cols_u8_k5, uchar, const int unused_k, 5)

// Along the height, like resample_cols in resample.cl: (n, h_in, w3) -> (n, h_out, w3), tap tables (idx, wt)
// with K taps per output row. mode 0: out = map(src); 1: out = other + map(src); 2: out = other - map(src).
#define COLS8(NAME, IN_T, LOAD, K_DECL, K)                                                           \
__kernel void NAME(__global const IN_T* src, __global float* dst, __global const float* other,     \
                   __global const int* idx, __global const float* wt, K_DECL,                       \
                   const int h_in, const int h_out, const int w3, const int mode)                   \
{                                                                                                    \
    const int x0 = min((int)get_global_id(0) * 8, w3 - 8);                                          \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    __global const IN_T* column = src + f * (long)h_in * w3 + x0;                                    \
    float8 acc = (float8)(0.0f);                                                                     \
    for (int t = 0; t < K; ++t) acc += wt[y * K + t] * LOAD(column + (long)idx[y * K + t] * w3);     \
    const long o = (f * h_out + y) * (long)w3 + x0;                                                  \
    if (mode == 1) acc = LD8(other + o, 0) + acc;                                                 \
    else if (mode == 2) acc = LD8(other + o, 0) - acc;                                            \
    ST8(acc, dst + o, 0);                                                                        \
}

COLS8(cols8_f32, float, LOAD_F32, const int k, k)
COLS8(cols8_u8, uchar, LOAD_U8, const int k, k)
COLS8(cols8_f32_k3, float, LOAD_F32, const int unused_k, 3)
COLS8(cols8_f32_k4, float, LOAD_F32, const int unused_k, 4)
COLS8(cols8_f32_k5, float, LOAD_F32, const int unused_k, 5)
COLS8(cols8_u8_k5, uchar, LOAD_U8, const int unused_k, 5)

// The same along the height from bytes, 16 values per work item (rows of at least 16 values): each tap's
// index and weight serve twice as many values, which matters for the long composed maps of the Gaussian
// down stack (about 4 * 2^level taps) that read the frames' bytes. The taps go four per iteration, then one
// by one, in the same order: where the count is a runtime value (61 taps for the face preset's level 4) the
// loop's own instructions were a fifth of the kernel's time (5.2 -> 3.9 ms for 17 face frames with PoCL,
// the same bits). Written out rather than asked for with a pragma, which PoCL's compiler reports it could
// not honour (a build log, hence a warning at every first build).
#define COLS16_TAP(t, K)                                                                             \
    {                                                                                                \
        const float wgt = wt[y * K + (t)];                                                           \
        const uchar16 v = *(__global const uchar16_u*)(column + (long)idx[y * K + (t)] * w3);        \
        lo += wgt * convert_float8(v.lo);                                                            \
        hi += wgt * convert_float8(v.hi);                                                            \
    }

#define COLS16_U8(NAME, K_DECL, K)                                                                   \
__kernel void NAME(__global const uchar* src, __global float* dst, __global const float* other,    \
                   __global const int* idx, __global const float* wt, K_DECL,                       \
                   const int h_in, const int h_out, const int w3, const int mode)                   \
{                                                                                                    \
    const int x0 = min((int)get_global_id(0) * 16, w3 - 16);                                        \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    __global const uchar* column = src + f * (long)h_in * w3 + x0;                                   \
    float8 lo = (float8)(0.0f), hi = (float8)(0.0f);                                                 \
    int t = 0;                                                                                       \
    for (; t + 4 <= K; t += 4) {                                                                     \
        COLS16_TAP(t, K)                                                                             \
        COLS16_TAP(t + 1, K)                                                                         \
        COLS16_TAP(t + 2, K)                                                                         \
        COLS16_TAP(t + 3, K)                                                                         \
    }                                                                                                \
    for (; t < K; ++t) COLS16_TAP(t, K)                                                              \
    const long o = (f * h_out + y) * (long)w3 + x0;                                                  \
    if (mode == 1) {                                                                                 \
        lo = LD8(other + o, 0) + lo;                                                                 \
        hi = LD8(other + o, 1) + hi;                                                                 \
    } else if (mode == 2) {                                                                          \
        lo = LD8(other + o, 0) - lo;                                                                 \
        hi = LD8(other + o, 1) - hi;                                                                 \
    }                                                                                                \
    ST8(lo, dst + o, 0);                                                                             \
    ST8(hi, dst + o, 1);                                                                             \
}

COLS16_U8(cols16_u8, const int k, k)
COLS16_U8(cols16_u8_k5, const int unused_k, 5)
