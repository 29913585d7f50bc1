// Element-wise arithmetic on float32 arrays, and the per-level gain with chrominance attenuation.

__kernel void axpby(__global const float* a, __global const float* b, __global float* dst,
                    const float alpha, const float beta)
{
    const long i = get_global_id(0);
    dst[i] = alpha * a[i] + beta * b[i];
}

// (pixels, 3): Y times gain_y, I and Q times gain_iq.
__kernel void level_gain(__global const float* src, __global float* dst, const float gain_y,
                         const float gain_iq)
{
    const long p = get_global_id(0) * 3;
    dst[p] = src[p] * gain_y;
    dst[p + 1] = src[p + 1] * gain_iq;
    dst[p + 2] = src[p + 2] * gain_iq;
}
