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
