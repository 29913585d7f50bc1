// The last stage of a pipeline in one pass per pixel: resample the (small) signal to full size, add it to the
// frame and write bytes with the MIT output handling (MIT_BYTES, in common.cl). Every step before the output is
// linear, so the colour matrices are folded into two 3 x 3 matrices: out = handle(C rgb + E signal), with
// C = YIQ->RGB . RGB->YIQ / 255 (the identity / 255 under the exact inverse) and E taking the signal's space to
// RGB in [0, 1]. Scalar loads and stores, exact global sizes, no bounds checks (see resample.cl).

// The matrices arrive as 18 scalar arguments (c0..c8, e0..e8): PoCL keeps those in registers, where loads
// from a buffer would be repeated for every pixel.
#define MATRIX_ARGS                                                                                  \
    const float c0, const float c1, const float c2, const float c3, const float c4, const float c5,  \
    const float c6, const float c7, const float c8, const float e0, const float e1, const float e2,  \
    const float e3, const float e4, const float e5, const float e6, const float e7, const float e8

#define FINISH(frames, out, p, s0, s1, s2)                                                           \
    {                                                                                                \
        const float r = frames[p], g = frames[p + 1], b = frames[p + 2];                             \
        MIT_BYTES(c0 * r + c1 * g + c2 * b + e0 * s0 + e1 * s1 + e2 * s2,                            \
                  c3 * r + c4 * g + c5 * b + e3 * s0 + e4 * s1 + e5 * s2,                            \
                  c6 * r + c7 * g + c8 * b + e6 * s0 + e7 * s1 + e8 * s2, out + p)                   \
    }

// frames (n, H, W, 3) bytes; signal (n, h, W, 3) already at full width: only the height is resampled here,
// through the table (iy, wy) of K taps per output row.
#define OUTPUT_COLS(NAME, K_DECL, K)                                                                  \
__kernel void NAME(__global const uchar* frames, __global const float* signal, __global uchar* out, \
                   __global const int* iy, __global const float* wy, K_DECL,                        \
                   const int H, const int W, const int h, MATRIX_ARGS)                                           \
{                                                                                                    \
    const int x = get_global_id(0);                                                                  \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    __global const float* column = signal + f * (long)h * W * 3 + x * 3;                             \
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;                                                           \
    for (int t = 0; t < K; ++t) {                                                                    \
        const float wgt = wy[y * K + t];                                                             \
        __global const float* v = column + (long)iy[y * K + t] * W * 3;                              \
        s0 += wgt * v[0];                                                                            \
        s1 += wgt * v[1];                                                                            \
        s2 += wgt * v[2];                                                                            \
    }                                                                                                \
    const long p = ((f * H + y) * (long)W + x) * 3;                                                  \
    FINISH(frames, out, p, s0, s1, s2)                                                 \
}

OUTPUT_COLS(output_cols, const int k, k)
OUTPUT_COLS(output_cols_k4, const int unused_k, 4)

// frames (n, H, W, 3) bytes; signal (n, h, w, 3): resampled in both directions here, through the tables
// (iy, wy) and (ix, wx) of K taps each (the Laplacian expand from the level below full size).
#define OUTPUT_2D(NAME, K_DECL, K)                                                                    \
__kernel void NAME(__global const uchar* frames, __global const float* signal, __global uchar* out, \
                   __global const int* iy, __global const float* wy,                                \
                   __global const int* ix, __global const float* wx, K_DECL,                        \
                   const int H, const int W, const int h, const int w, MATRIX_ARGS)                              \
{                                                                                                    \
    const int x = get_global_id(0);                                                                  \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    __global const float* image = signal + f * (long)h * w * 3;                                      \
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;                                                           \
    for (int a = 0; a < K; ++a) {                                                                    \
        __global const float* line = image + (long)iy[y * K + a] * w * 3;                            \
        float r0 = 0.0f, r1 = 0.0f, r2 = 0.0f;                                                       \
        for (int b = 0; b < K; ++b) {                                                                \
            const float wgt = wx[x * K + b];                                                         \
            __global const float* v = line + ix[x * K + b] * 3;                                      \
            r0 += wgt * v[0];                                                                        \
            r1 += wgt * v[1];                                                                        \
            r2 += wgt * v[2];                                                                        \
        }                                                                                            \
        const float wa = wy[y * K + a];                                                              \
        s0 += wa * r0;                                                                               \
        s1 += wa * r1;                                                                               \
        s2 += wa * r2;                                                                               \
    }                                                                                                \
    const long p = ((f * H + y) * (long)W + x) * 3;                                                  \
    FINISH(frames, out, p, s0, s1, s2)                                                 \
}

OUTPUT_2D(output_2d, const int k, k)
OUTPUT_2D(output_2d_k3, const int unused_k, 3)
