// Definitions every kernel file shares; the runtime puts this file in front of each one it builds.

// Negative values become 0; a pixel with a channel above 1 is divided by its largest channel (hue kept);
// then uint8(x * 255), rounding half away from zero as MATLAB does (the values are >= 0 by then, so that is
// truncating x * 255 + 0.5). Writes the three bytes at o. Written with selects and a truncating conversion, not
// fmax / round, which PoCL turns into calls per element instead of vector instructions.
#define MIT_BYTES(R, G, B, o)                                                                        \
    {                                                                                                \
        float r_ = R, g_ = G, b_ = B;                                                                \
        r_ = r_ > 0.0f ? r_ : 0.0f;                                                                  \
        g_ = g_ > 0.0f ? g_ : 0.0f;                                                                  \
        b_ = b_ > 0.0f ? b_ : 0.0f;                                                                  \
        float peak_ = r_ > g_ ? r_ : g_;                                                             \
        peak_ = peak_ > b_ ? peak_ : b_;                                                             \
        const float s_ = peak_ > 1.0f ? 255.0f / peak_ : 255.0f;                                     \
        r_ *= s_;                                                                                    \
        g_ *= s_;                                                                                    \
        b_ *= s_;                                                                                    \
        (o)[0] = (uchar)((r_ < 255.0f ? r_ : 255.0f) + 0.5f);                                        \
        (o)[1] = (uchar)((g_ < 255.0f ? g_ : 255.0f) + 0.5f);                                        \
        (o)[2] = (uchar)((b_ < 255.0f ? b_ : 255.0f) + 0.5f);                                        \
    }

// Hand-vectorised kernels (the ...8 kernels of resample.cl, fused.cl and temporal.cl): each work item handles
// 8 consecutive values (or pixels) of a row with vector loads and stores and float8 arithmetic. PoCL's
// work-group vectoriser leaves the one-value-per-work-item kernels scalar; written this way the compiler emits
// SIMD code whatever the driver does across work items.
//
// A row of n values is covered by ceil(n / 8) work items; the last one starts at n - 8 instead of running past
// the end, so it recomputes a few values the one before it wrote, with the same result (the kernels never write
// a buffer they read). Rows must therefore hold at least 8 values (pixels for output_cols8); the host uses
// the scalar kernels below that.

// Vector types with the alignment of their elements: a load or store through a pointer to one is a single
// unaligned vector instruction, where PoCL turns vload8 / vstore8 into 8 scalar accesses.
typedef float8 __attribute__((aligned(4))) float8_u;
typedef uchar8 __attribute__((aligned(1))) uchar8_u;
typedef uchar16 __attribute__((aligned(1))) uchar16_u;
#define LD8(p, i) (((__global const float8_u*)(p))[i])
#define ST8(v, p, i) (((__global float8_u*)(p))[i] = (v))
#define LD8U(p, i) convert_float8(((__global const uchar8_u*)(p))[i])
#define ST8U(v, p, i) (((__global uchar8_u*)(p))[i] = (v))

#define LOAD_F32(p) LD8(p, 0)
#define LOAD_U8(p) LD8U(p, 0)

// Three float8 holding 8 interleaved RGB pixels (a: values 0-7, b: 8-15, c: 16-23) -> one float8 per channel.
#define DEINTERLEAVE(a, b, c, R, G, B)                                                               \
    const float8 R = (float8)(a.s0, a.s3, a.s6, b.s1, b.s4, b.s7, c.s2, c.s5);                      \
    const float8 G = (float8)(a.s1, a.s4, a.s7, b.s2, b.s5, c.s0, c.s3, c.s6);                      \
    const float8 B = (float8)(a.s2, a.s5, b.s0, b.s3, b.s6, c.s1, c.s4, c.s7);

// The MIT output handling of MIT_BYTES (common.cl) on 8 pixels: negatives to 0, a pixel with a channel above
// 1 divided by its largest channel, then x * 255 rounded half up (truncating x * 255 + 0.5, values >= 0).
#define MIT_BYTES8(R, G, B, o)                                                                       \
    {                                                                                                \
        const float8 zero_ = (float8)(0.0f), one_ = (float8)(1.0f), top_ = (float8)(255.0f);        \
        float8 r_ = (R), g_ = (G), b_ = (B);                                                         \
        r_ = r_ > zero_ ? r_ : zero_;                                                                \
        g_ = g_ > zero_ ? g_ : zero_;                                                                \
        b_ = b_ > zero_ ? b_ : zero_;                                                                \
        float8 peak_ = r_ > g_ ? r_ : g_;                                                            \
        peak_ = peak_ > b_ ? peak_ : b_;                                                             \
        const float8 s_ = peak_ > one_ ? top_ / peak_ : top_;                                        \
        r_ *= s_;                                                                                    \
        g_ *= s_;                                                                                    \
        b_ *= s_;                                                                                    \
        r_ = (r_ < top_ ? r_ : top_) + 0.5f;                                                         \
        g_ = (g_ < top_ ? g_ : top_) + 0.5f;                                                         \
        b_ = (b_ < top_ ? b_ : top_) + 0.5f;                                                         \
        /* truncated to bytes, packed one pixel per 32-bit word (r | g << 8 | b << 16) and the words'  \
           low three bytes stored: cheaper than shuffling floats or bytes across three vectors */    \
        const uint8 word_ = convert_uint8(r_) | (convert_uint8(g_) << 8) | (convert_uint8(b_) << 16); \
        const uchar16 lo_ = as_uchar16(word_.lo), hi_ = as_uchar16(word_.hi);                        \
        ST8U((uchar8)(lo_.s0, lo_.s1, lo_.s2, lo_.s4, lo_.s5, lo_.s6, lo_.s8, lo_.s9), o, 0);        \
        ST8U((uchar8)(lo_.sa, lo_.sc, lo_.sd, lo_.se, hi_.s0, hi_.s1, hi_.s2, hi_.s4), o, 1);        \
        ST8U((uchar8)(hi_.s5, hi_.s6, hi_.s8, hi_.s9, hi_.sa, hi_.sc, hi_.sd, hi_.se), o, 2);        \
    }
