// The last stage of a pipeline in one pass per pixel: resample the (small) signal to full size, add it to the
// frame and write bytes with the MIT output handling (MIT_BYTES, in common.cl). Every step before the output is
// linear, so the colour matrices are folded into two 3 x 3 matrices: out = handle(C rgb + E signal), with
// C = YIQ->RGB . RGB->YIQ / 255 (the identity / 255 under the exact inverse) and E taking the signal's space to
// RGB in [0, 1]. The signal arrives at full width (the pipelines widen it first, at its own height, which is
// far cheaper than a 2-D gather per output pixel), so only the height is resampled here. output_cols8 is the
// form used on frames at least 8 pixels wide (hand-vectorised, see common.cl); output_cols, one pixel per
// work item with scalar loads and stores, covers narrower frames.

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

// output_cols on 8 pixels per work item: frames (n, H, W, 3) bytes plus a signal (n, h, W, 3) resampled along
// the height through (iy, wy), K taps per output row. FULL_C 1: out = handle(C rgb + E signal); FULL_C 0: C
// is diagonal (the exact inverse) and the signal is already in RGB (E applied to the small signal on the
// host side of the pipeline), out = handle(diag(c0, c4, c8) rgb + signal): 18 multiply-adds fewer per pixel.
#define OUTPUT_COLS8(NAME, K_DECL, K, FULL_C)                                                        \
__kernel void NAME(__global const uchar* frames, __global const float* signal, __global uchar* out, \
                   __global const int* iy, __global const float* wy, K_DECL,                        \
                   const int H, const int W, const int h, MATRIX_ARGS)                              \
{                                                                                                    \
    const int x0 = min((int)get_global_id(0) * 8, W - 8);                                           \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    __global const float* column = signal + (f * (long)h * W + x0) * 3;                              \
    float8 sa = (float8)(0.0f), sb = (float8)(0.0f), sc = (float8)(0.0f);                           \
    for (int t = 0; t < K; ++t) {                                                                    \
        const float wgt = wy[y * K + t];                                                             \
        __global const float* v = column + (long)iy[y * K + t] * W * 3;                              \
        sa += wgt * LD8(v, 0);                                                                       \
        sb += wgt * LD8(v, 1);                                                                       \
        sc += wgt * LD8(v, 2);                                                                       \
    }                                                                                                \
    const long p = ((f * H + y) * (long)W + x0) * 3;                                                 \
    /* the frame's bytes split into channels as bytes (one shuffle each), then widened */            \
    const uchar16 ba = *(__global const uchar16_u*)(frames + p);                                     \
    const uchar8 bb = *(__global const uchar8_u*)(frames + p + 16);                                  \
    const float8 r = convert_float8((uchar8)(ba.s0, ba.s3, ba.s6, ba.s9, ba.sc, ba.sf, bb.s2, bb.s5)); \
    const float8 g = convert_float8((uchar8)(ba.s1, ba.s4, ba.s7, ba.sa, ba.sd, bb.s0, bb.s3, bb.s6)); \
    const float8 b = convert_float8((uchar8)(ba.s2, ba.s5, ba.s8, ba.sb, ba.se, bb.s1, bb.s4, bb.s7)); \
    DEINTERLEAVE(sa, sb, sc, s0, s1, s2)                                                             \
    if (FULL_C) {                                                                                    \
        MIT_BYTES8(c0 * r + c1 * g + c2 * b + e0 * s0 + e1 * s1 + e2 * s2,                           \
                   c3 * r + c4 * g + c5 * b + e3 * s0 + e4 * s1 + e5 * s2,                           \
                   c6 * r + c7 * g + c8 * b + e6 * s0 + e7 * s1 + e8 * s2, out + p)                  \
    } else {                                                                                         \
        MIT_BYTES8(c0 * r + s0, c4 * g + s1, c8 * b + s2, out + p)                                   \
    }                                                                                                \
}

OUTPUT_COLS8(output_cols8, const int k, k, 1)
OUTPUT_COLS8(output_cols8_k3, const int unused_k, 3, 1)
OUTPUT_COLS8(output_cols8_k4, const int unused_k, 4, 1)
OUTPUT_COLS8(output_cols8_rgb, const int k, k, 0)
OUTPUT_COLS8(output_cols8_rgb_k3, const int unused_k, 3, 0)
OUTPUT_COLS8(output_cols8_rgb_k4, const int unused_k, 4, 0)
