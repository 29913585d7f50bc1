// Colour conversion and the MIT output handling, one work item per pixel. Arrays are (pixels, 3) float32 or
// uint8, channel last; matrices come as 9 floats, row major. Written with scalar loads and stores (PoCL
// vectorises those across work items far better than vload3 / vstore3) and without bounds checks (global sizes
// are exact). MIT_BYTES is in common.cl.

#define PIXEL_MATRIX(NAME, IN_T)                                                                     \
__kernel void NAME(__global const IN_T* src, __global float* dst, __global const float* m)          \
{                                                                                                    \
    const long p = get_global_id(0) * 3;                                                             \
    const float a = src[p], b = src[p + 1], c = src[p + 2];                                          \
    dst[p] = m[0] * a + m[1] * b + m[2] * c;                                                         \
    dst[p + 1] = m[3] * a + m[4] * b + m[5] * c;                                                     \
    dst[p + 2] = m[6] * a + m[7] * b + m[8] * c;                                                     \
}

// Pixels times a 3 x 3 matrix (RGB -> YIQ, with the 1 / 255 of bytes folded into the matrix).
PIXEL_MATRIX(pixel_matrix_u8, uchar)
PIXEL_MATRIX(pixel_matrix_f32, float)

// YIQ -> RGB bytes with the MIT output handling.
__kernel void yiq_to_rgb_u8(__global const float* src, __global uchar* dst, __global const float* m)
{
    const long p = get_global_id(0) * 3;
    const float y = src[p], i = src[p + 1], q = src[p + 2];
    MIT_BYTES(m[0] * y + m[1] * i + m[2] * q, m[3] * y + m[4] * i + m[5] * q, m[6] * y + m[7] * i + m[8] * q,
              dst + p)
}
