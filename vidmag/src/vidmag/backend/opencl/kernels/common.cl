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
