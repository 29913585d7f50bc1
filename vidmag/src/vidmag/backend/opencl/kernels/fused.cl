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

// --- The streaming pipelines' per-level kernels (vidmag.backend.opencl.streaming) ------------------------
// A frame-at-a-time stream is bound by launches, not arithmetic, below level 1: each level of the pyramid is
// one launch down (reduce along both axes) and one launch up (form the band, run the two low-passes, apply
// the gain, add the expanded coarser signal). Both gather through the same one-axis tap tables as
// resample.cl, the height's (iy, wy) outside and the width's (ix, wx) inside, so each tap row is summed
// along the width first, then weighted along the height, as the separable passes do.

// Reduce along both axes: src (n, h, w, 3) float -> dst (n, ho, wo, 3); work item (x_out, y_out, frame).
#define REDUCE2D(NAME, KY_DECL, KY, KX_DECL, KX)                                                     \
__kernel void NAME(__global const float* src, __global float* dst,                                 \
                   __global const int* iy, __global const float* wy, KY_DECL,                       \
                   __global const int* ix, __global const float* wx, KX_DECL,                       \
                   const int h, const int w, const int ho, const int wo)                            \
{                                                                                                    \
    const int x = get_global_id(0);                                                                  \
    const int y = get_global_id(1);                                                                  \
    const long f = get_global_id(2);                                                                 \
    float a = 0.0f, b = 0.0f, c = 0.0f;                                                              \
    for (int ty = 0; ty < KY; ++ty) {                                                                \
        __global const float* line = src + (f * h + iy[y * KY + ty]) * (long)w * 3;                  \
        float ra = 0.0f, rb = 0.0f, rc = 0.0f;                                                       \
        for (int tx = 0; tx < KX; ++tx) {                                                            \
            const int i = ix[x * KX + tx] * 3;                                                       \
            const float wgt = wx[x * KX + tx];                                                       \
            ra += wgt * line[i];                                                                     \
            rb += wgt * line[i + 1];                                                                 \
            rc += wgt * line[i + 2];                                                                 \
        }                                                                                            \
        const float wgt = wy[y * KY + ty];                                                           \
        a += wgt * ra;                                                                               \
        b += wgt * rb;                                                                               \
        c += wgt * rc;                                                                               \
    }                                                                                                \
    __global float* o = dst + ((f * ho + y) * (long)wo + x) * 3;                                     \
    o[0] = a;                                                                                        \
    o[1] = b;                                                                                        \
    o[2] = c;                                                                                        \
}

REDUCE2D(reduce2d, const int ky, ky, const int kx, kx)
REDUCE2D(reduce2d_k5, const int unused_ky, 5, const int unused_kx, 5)

// Expand along both axes of one pixel's three channels of `src` (n, hl, wl, 3) at (x, y) of frame f, into
// A, B, C (declared by the caller), through the tables (iy, wy) of KY taps and (ix, wx) of KX taps.
#define EXPAND_AT(src, A, B, C, KY, KX)                                                                    \
    for (int ty = 0; ty < KY; ++ty) {                                                                \
        __global const float* line = src + (f * hl + iy[y * KY + ty]) * (long)wl * 3;                \
        float ra = 0.0f, rb = 0.0f, rc = 0.0f;                                                       \
        for (int tx = 0; tx < KX; ++tx) {                                                            \
            const int i = ix[x * KX + tx] * 3;                                                       \
            const float wgt = wx[x * KX + tx];                                                       \
            ra += wgt * line[i];                                                                     \
            rb += wgt * line[i + 1];                                                                 \
            rc += wgt * line[i + 2];                                                                 \
        }                                                                                            \
        const float wgt = wy[y * KY + ty];                                                           \
        A += wgt * ra;                                                                               \
        B += wgt * rb;                                                                               \
        C += wgt * rc;                                                                               \
    }

// One level of the way up, for frames 0 .. n-1 in order: band = image - expand(low); the two first-order
// low-passes (states s1, s2 and the previous band xp, (h, w, 3), carried between launches) take the band,
// filtered = g * (lp1 - lp2); out = filtered + expand(coarse). mode bit 1: the level has a band and state
// (else filtered = 0 and nothing of image, low or the states is read); bit 2: there is a coarser signal
// (else expand(coarse) = 0); bit 4: start the states at the band of frame 0 (n = 1; out is not written).
// image, out (n, h, w, 3); low, coarse (n, hl, wl, 3); work item (x, y).
#define LEVEL_UP(NAME, KY_DECL, KY, KX_DECL, KX)                                                     \
__kernel void NAME(__global const float* image, __global const float* low,                         \
                   __global const float* coarse, __global float* out,                               \
                   __global float* s1, __global float* s2, __global float* xp,                      \
                   __global const int* iy, __global const float* wy, KY_DECL,                       \
                   __global const int* ix, __global const float* wx, KX_DECL,                       \
                   const int n, const int h, const int w, const int hl, const int wl, const int mode, \
                   const float c1_y, const float c1_x, const float c1_xp,                           \
                   const float c2_y, const float c2_x, const float c2_xp, const float g)            \
{                                                                                                    \
    const int x = get_global_id(0);                                                                  \
    const int y = get_global_id(1);                                                                  \
    const long p = ((long)y * w + x) * 3;                                                            \
    const long plane = (long)h * w * 3;                                                              \
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f;                          \
    float q0 = 0.0f, q1 = 0.0f, q2 = 0.0f;                                                           \
    if (mode & 1) {                                                                                  \
        a0 = s1[p]; a1 = s1[p + 1]; a2 = s1[p + 2];                                                  \
        b0 = s2[p]; b1 = s2[p + 1]; b2 = s2[p + 2];                                                  \
        q0 = xp[p]; q1 = xp[p + 1]; q2 = xp[p + 2];                                                  \
    }                                                                                                \
    for (long f = 0; f < n; ++f) {                                                                   \
        float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f;                                                       \
        if (mode & 1) {                                                                              \
            float e0 = 0.0f, e1 = 0.0f, e2 = 0.0f;                                                   \
            EXPAND_AT(low, e0, e1, e2, KY, KX)                                                             \
            __global const float* im = image + f * plane + p;                                        \
            const float d0 = im[0] - e0, d1 = im[1] - e1, d2 = im[2] - e2;                           \
            if (mode & 4) {                                                                          \
                a0 = b0 = q0 = d0;                                                                   \
                a1 = b1 = q1 = d1;                                                                   \
                a2 = b2 = q2 = d2;                                                                   \
            } else {                                                                                 \
                a0 = c1_y * a0 + c1_x * d0 + c1_xp * q0;                                             \
                a1 = c1_y * a1 + c1_x * d1 + c1_xp * q1;                                             \
                a2 = c1_y * a2 + c1_x * d2 + c1_xp * q2;                                             \
                b0 = c2_y * b0 + c2_x * d0 + c2_xp * q0;                                             \
                b1 = c2_y * b1 + c2_x * d1 + c2_xp * q1;                                             \
                b2 = c2_y * b2 + c2_x * d2 + c2_xp * q2;                                             \
                q0 = d0;                                                                             \
                q1 = d1;                                                                             \
                q2 = d2;                                                                             \
                v0 = g * (a0 - b0);                                                                  \
                v1 = g * (a1 - b1);                                                                  \
                v2 = g * (a2 - b2);                                                                  \
            }                                                                                        \
        }                                                                                            \
        if (mode & 4) continue;                                                                      \
        if (mode & 2) {                                                                              \
            float e0 = 0.0f, e1 = 0.0f, e2 = 0.0f;                                                   \
            EXPAND_AT(coarse, e0, e1, e2, KY, KX)                                                          \
            v0 = v0 + e0;                                                                            \
            v1 = v1 + e1;                                                                            \
            v2 = v2 + e2;                                                                            \
        }                                                                                            \
        __global float* o = out + f * plane + p;                                                     \
        o[0] = v0;                                                                                   \
        o[1] = v1;                                                                                   \
        o[2] = v2;                                                                                   \
    }                                                                                                \
    if (mode & 1) {                                                                                  \
        s1[p] = a0; s1[p + 1] = a1; s1[p + 2] = a2;                                                  \
        s2[p] = b0; s2[p + 1] = b1; s2[p + 2] = b2;                                                  \
        xp[p] = q0; xp[p + 1] = q1; xp[p + 2] = q2;                                                  \
    }                                                                                                \
}

LEVEL_UP(level_up, const int ky, ky, const int kx, kx)
LEVEL_UP(level_up_k3, const int unused_ky, 3, const int unused_kx, 3)

// level_up of the large levels in two launches, where arithmetic rather than launches bounds the time: the
// expand along the width first, at the coarse height (widen2, one pixel per work item, of the low image and
// the coarser signal together), then level_up8: the expand along the height, the band, the low-passes and
// the collapse step on 8 consecutive values per work item (rows of w * 3 values, a multiple of 8: no work
// item overlaps another, which the in-place state update needs). Mode bits as in level_up.
// low, coarse (n, hl, wl, 3) -> wide_low, wide_coarse (n, hl, w, 3); work item (x, y_coarse, frame).
#define WIDEN2(NAME, KX_DECL, KX)                                                                    \
__kernel void NAME(__global const float* low, __global const float* coarse,                        \
                   __global float* wide_low, __global float* wide_coarse,                           \
                   __global const int* ix, __global const float* wx, KX_DECL,                       \
                   const int wl, const int w, const int mode)                                       \
{                                                                                                    \
    const int x = get_global_id(0);                                                                  \
    const long row = get_global_id(2) * get_global_size(1) + get_global_id(1);                       \
    __global const float* a = low + row * (long)wl * 3;                                              \
    __global const float* b = coarse + row * (long)wl * 3;                                           \
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f;                          \
    for (int t = 0; t < KX; ++t) {                                                                   \
        const int i = ix[x * KX + t] * 3;                                                            \
        const float wgt = wx[x * KX + t];                                                            \
        if (mode & 1) {                                                                              \
            a0 += wgt * a[i];                                                                        \
            a1 += wgt * a[i + 1];                                                                    \
            a2 += wgt * a[i + 2];                                                                    \
        }                                                                                            \
        if (mode & 2) {                                                                              \
            b0 += wgt * b[i];                                                                        \
            b1 += wgt * b[i + 1];                                                                    \
            b2 += wgt * b[i + 2];                                                                    \
        }                                                                                            \
    }                                                                                                \
    const long o = (row * w + x) * 3;                                                                \
    if (mode & 1) {                                                                                  \
        wide_low[o] = a0;                                                                            \
        wide_low[o + 1] = a1;                                                                        \
        wide_low[o + 2] = a2;                                                                        \
    }                                                                                                \
    if (mode & 2) {                                                                                  \
        wide_coarse[o] = b0;                                                                         \
        wide_coarse[o + 1] = b1;                                                                     \
        wide_coarse[o + 2] = b2;                                                                     \
    }                                                                                                \
}

WIDEN2(widen2, const int kx, kx)
WIDEN2(widen2_k3, const int unused_kx, 3)

// image, out (n, h, w3); wide_low, wide_coarse (n, hl, w3); states (h, w3); work item (x / 8, y).
#define LEVEL_UP8(NAME, KY_DECL, KY)                                                                 \
__kernel void NAME(__global const float* image, __global const float* wide_low,                    \
                   __global const float* wide_coarse, __global float* out,                          \
                   __global float* s1, __global float* s2, __global float* xp,                      \
                   __global const int* iy, __global const float* wy, KY_DECL,                       \
                   const int n, const int h, const int w3, const int hl, const int mode,            \
                   const float c1_y, const float c1_x, const float c1_xp,                           \
                   const float c2_y, const float c2_x, const float c2_xp, const float g)            \
{                                                                                                    \
    const int x0 = (int)get_global_id(0) * 8;                                                        \
    const int y = get_global_id(1);                                                                  \
    const long p = (long)y * w3 + x0;                                                                \
    const long plane = (long)h * w3, coarse_plane = (long)hl * w3;                                   \
    float8 a = (float8)(0.0f), b = (float8)(0.0f), q = (float8)(0.0f);                              \
    if (mode & 1) {                                                                                  \
        a = LD8(s1 + p, 0);                                                                          \
        b = LD8(s2 + p, 0);                                                                          \
        q = LD8(xp + p, 0);                                                                          \
    }                                                                                                \
    for (long f = 0; f < n; ++f) {                                                                   \
        float8 v = (float8)(0.0f);                                                                   \
        if (mode & 1) {                                                                              \
            float8 e = (float8)(0.0f);                                                               \
            for (int t = 0; t < KY; ++t)                                                             \
                e += wy[y * KY + t] * LD8(wide_low + f * coarse_plane + (long)iy[y * KY + t] * w3 + x0, 0); \
            const float8 d = LD8(image + f * plane + p, 0) - e;                                      \
            if (mode & 4) {                                                                          \
                a = d;                                                                               \
                b = d;                                                                               \
                q = d;                                                                               \
            } else {                                                                                 \
                a = c1_y * a + c1_x * d + c1_xp * q;                                                 \
                b = c2_y * b + c2_x * d + c2_xp * q;                                                 \
                q = d;                                                                               \
                v = g * (a - b);                                                                     \
            }                                                                                        \
        }                                                                                            \
        if (mode & 4) continue;                                                                      \
        if (mode & 2) {                                                                              \
            float8 e = (float8)(0.0f);                                                               \
            for (int t = 0; t < KY; ++t)                                                             \
                e += wy[y * KY + t] * LD8(wide_coarse + f * coarse_plane + (long)iy[y * KY + t] * w3 + x0, 0); \
            v = v + e;                                                                               \
        }                                                                                            \
        ST8(v, out + f * plane + p, 0);                                                              \
    }                                                                                                \
    if (mode & 1) {                                                                                  \
        ST8(a, s1 + p, 0);                                                                           \
        ST8(b, s2 + p, 0);                                                                           \
        ST8(q, xp + p, 0);                                                                           \
    }                                                                                                \
}

LEVEL_UP8(level_up8, const int ky, ky)
LEVEL_UP8(level_up8_k3, const int unused_ky, 3)

// The small levels of a pyramid in one launch of one work group: below some thousands of pixels a level's
// arithmetic is far less than a launch costs, so the levels from `first` up to the top kept level go down
// (reduce2d's sums) and back up (level_up's) inside one kernel, a barrier between two levels, frame after
// frame. image_s (n, h, w, 3) is level `first` (from the launch before); signal_s (n, h, w, 3) gets its
// collapsed signal (for the launch after). The other levels' images and signals live in `scratch`, their
// states in `states` (s1, s2, xp one after another), at the offsets of `meta`, 12 ints per level j = 0 ..
// count (level first + j; the last, count, is the image below the top only):
//   h, w, image offset, signal offset, state offset, has band, reduce iy, reduce ix (taps to j + 1, 5 each),
//   expand iy, expand ix (taps from j + 1, 3 each), gain index, floats from one state to the next.
// Tap indices in ti, weights in tw, at the same offsets. mode bit 4 (start, n = 1): the states take the bands
// of frame 0 and no signal is written.
#define META(j, i) meta[(j) * 12 + (i)]

// The separable n-tap sum at output (y, x) of an interleaved RGB image `src` of row length w: rows by the
// taps at ti / tw[ry + y * n ..], then columns by those at [rx + x * n ..] (each row first, as every level
// of tail_levels sums them, so down and up and both expansions round alike).
inline float3 separable_taps(__global const float* src, __global const int* ti, __global const float* tw,
                             const int ry, const int rx, const int y, const int x, const int w, const int n)
{
    float a = 0.0f, b = 0.0f, c = 0.0f;
    for (int ty = 0; ty < n; ++ty) {
        __global const float* line = src + (long)ti[ry + y * n + ty] * w * 3;
        float ra = 0.0f, rb = 0.0f, rc = 0.0f;
        for (int tx = 0; tx < n; ++tx) {
            const int k = ti[rx + x * n + tx] * 3;
            const float wgt = tw[rx + x * n + tx];
            ra += wgt * line[k];
            rb += wgt * line[k + 1];
            rc += wgt * line[k + 2];
        }
        const float wgt = tw[ry + y * n + ty];
        a += wgt * ra;
        b += wgt * rb;
        c += wgt * rc;
    }
    return (float3)(a, b, c);
}

__kernel void tail_levels(__global const float* image_s, __global float* signal_s,
                          __global float* scratch, __global float* states,
                          __global const int* meta, __global const int* ti, __global const float* tw,
                          __global const float* gains, const int n, const int count, const int mode,
                          const float c1_y, const float c1_x, const float c1_xp,
                          const float c2_y, const float c2_x, const float c2_xp)
{
    const int lid = get_local_id(0);
    const int size = get_local_size(0);
    const long plane_s = (long)META(0, 0) * META(0, 1) * 3;
    for (int f = 0; f < n; ++f) {
        // down: level j -> j + 1
        for (int j = 0; j < count; ++j) {
            const int h = META(j, 0), w = META(j, 1), ho = META(j + 1, 0), wo = META(j + 1, 1);
            __global const float* src = j == 0 ? image_s + f * plane_s : scratch + META(j, 2);
            __global float* dst = scratch + META(j + 1, 2);
            const int ry = META(j, 6), rx = META(j, 7);
            for (int i = lid; i < ho * wo; i += size) {
                const int y = i / wo, x = i - y * wo;
                const float3 v = separable_taps(src, ti, tw, ry, rx, y, x, w, 5);
                __global float* o = dst + (long)i * 3;
                o[0] = v.x;
                o[1] = v.y;
                o[2] = v.z;
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
        // up: level j from the top (count - 1) to 0
        for (int j = count - 1; j >= 0; --j) {
            const int h = META(j, 0), w = META(j, 1), hl = META(j + 1, 0), wl = META(j + 1, 1);
            const int band = META(j, 5), coarser = j < count - 1 && !(mode & 4);
            __global const float* image = j == 0 ? image_s + f * plane_s : scratch + META(j, 2);
            __global const float* low = scratch + META(j + 1, 2);
            __global const float* coarse = scratch + META(j + 1, 3);
            __global float* out = j == 0 ? signal_s + f * plane_s : scratch + META(j, 3);
            __global float* s1 = states + META(j, 4);
            __global float* s2 = s1 + META(j, 11);
            __global float* xp = s2 + META(j, 11);
            const int ey = META(j, 8), ex = META(j, 9);
            const float g = gains[META(j, 10)];
            for (int i = lid; i < h * w; i += size) {
                const int y = i / w, x = i - y * w;
                const long p = (long)i * 3;
                float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f;
                if (band) {
                    const float3 e = separable_taps(low, ti, tw, ey, ex, y, x, wl, 3);
                    const float e0 = e.x, e1 = e.y, e2 = e.z;
                    const float d0 = image[p] - e0, d1 = image[p + 1] - e1, d2 = image[p + 2] - e2;
                    if (mode & 4) {
                        s1[p] = s2[p] = xp[p] = d0;
                        s1[p + 1] = s2[p + 1] = xp[p + 1] = d1;
                        s1[p + 2] = s2[p + 2] = xp[p + 2] = d2;
                    } else {
                        const float a0 = c1_y * s1[p] + c1_x * d0 + c1_xp * xp[p];
                        const float a1 = c1_y * s1[p + 1] + c1_x * d1 + c1_xp * xp[p + 1];
                        const float a2 = c1_y * s1[p + 2] + c1_x * d2 + c1_xp * xp[p + 2];
                        const float b0 = c2_y * s2[p] + c2_x * d0 + c2_xp * xp[p];
                        const float b1 = c2_y * s2[p + 1] + c2_x * d1 + c2_xp * xp[p + 1];
                        const float b2 = c2_y * s2[p + 2] + c2_x * d2 + c2_xp * xp[p + 2];
                        s1[p] = a0; s1[p + 1] = a1; s1[p + 2] = a2;
                        s2[p] = b0; s2[p + 1] = b1; s2[p + 2] = b2;
                        xp[p] = d0; xp[p + 1] = d1; xp[p + 2] = d2;
                        v0 = g * (a0 - b0);
                        v1 = g * (a1 - b1);
                        v2 = g * (a2 - b2);
                    }
                }
                if (mode & 4) continue;
                if (coarser) {
                    const float3 e = separable_taps(coarse, ti, tw, ey, ex, y, x, wl, 3);
                    const float e0 = e.x, e1 = e.y, e2 = e.z;
                    v0 = v0 + e0;
                    v1 = v1 + e1;
                    v2 = v2 + e2;
                }
                out[p] = v0;
                out[p + 1] = v1;
                out[p + 2] = v2;
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
    }
}
