// The Riesz pipelines' per-pixel steps (vidmag._reference.riesz, in float32), on single-channel images (h, w)
// of luminance, one pyramid level at a time: a pyramid step is one launch (both axes' tap tables), a level's
// Riesz transform, phase step and temporal filter one, the amplitude-weighted blur two (rows; columns with the
// phase shift), the three weighted values of a pixel kept side by side as the channels of an RGB pixel are
// (levels narrower than 8 pixels take resample.cl's row map for the rows). The ...8 kernels take 8 pixels a
// work item (see common.cl). Global sizes are exact and the kernels have no bounds checks (see resample.cl).
// MIT_BYTES is in common.cl.

// Luminance of RGB bytes: Y = m0 r + m1 g + m2 b (the 1 / 255 of the bytes folded into m).
__kernel void riesz_luma(__global const uchar* src, __global float* dst, const float m0, const float m1,
                         const float m2)
{
    const long i = get_global_id(0);
    const long p = i * 3;
    dst[i] = m0 * (float)src[p] + m1 * (float)src[p + 1] + m2 * (float)src[p + 2];
}

// One pyramid step of a single-channel image in one launch, work item (x_out, y_out): both axes' tap tables
// (spatial_taps: idx, wt, k taps per output sample) applied in the reference's order. The reduce filters
// along the width, then the height: out = sum_ty wy (sum_tx wx in).
__kernel void riesz_reduce(__global const float* src, __global float* dst,
                           __global const int* ix, __global const float* wx, const int kx,
                           __global const int* iy, __global const float* wy, const int ky,
                           const int w_in, const int w_out)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    float acc = 0.0f;
    for (int ty = 0; ty < ky; ++ty) {
        __global const float* line = src + (long)iy[y * ky + ty] * w_in;
        float row = 0.0f;
        for (int tx = 0; tx < kx; ++tx) row += wx[x * kx + tx] * line[ix[x * kx + tx]];
        acc += wy[y * ky + ty] * row;
    }
    dst[(long)y * w_out + x] = acc;
}

// The expand runs along the height, then the width: out = sum_tx wx (sum_ty wy in). mode 0: out = expand;
// 1: out = other + expand (a collapse step); 2: out = other - expand (a Laplacian band).
__kernel void riesz_expand(__global const float* src, __global float* dst, __global const float* other,
                           __global const int* ix, __global const float* wx, const int kx,
                           __global const int* iy, __global const float* wy, const int ky,
                           const int w_in, const int w_out, const int mode)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    float acc = 0.0f;
    for (int tx = 0; tx < kx; ++tx) {
        __global const float* column = src + ix[x * kx + tx];
        float col = 0.0f;
        for (int ty = 0; ty < ky; ++ty) col += wy[y * ky + ty] * column[(long)iy[y * ky + ty] * w_in];
        acc += wx[x * kx + tx] * col;
    }
    const long o = (long)y * w_out + x;
    const float base = mode == 0 ? 0.0f : other[o];
    dst[o] = mode == 2 ? base - acc : base + acc;
}

// The temporal filter of one pixel's accumulated phase (xc, xs), and the amplitude weighting of what it
// passes. kind 1: Butterworth, LP(fh) - LP(fl), each y = (-a1 y + b0 x + b1 x_prev) / a0 (coefficients h*
// of the high low-pass, l* of the low one); kind 2: the MIT IIR, (1 - r1) y + r1 x minus the same with r2
// (hb0 = 1 - r1, hb1 = r1, lb0 = 1 - r2, lb1 = r2: y = c0 y + c1 x); kind 0: no filter (riesz_ideal: the
// value is already band-passed). s: the pixel's state (high_c, low_c, prev_c, high_s, low_s, prev_s, planes
// of the level's n pixels);
// first != 0 starts it at this frame's phase (the output, 0, is not used).
// Writes (f_c w, f_s w, w) at o, w = amplitude + 1e-12 when weigh != 0 (the amplitude-weighted blur's
// numerators and denominator), w = 1 otherwise (no blur: the shift divides by 1).
#define FILTER_ARGS const int kind, const int first, const int weigh,                                  \
                    const float hb0, const float hb1, const float ha0, const float ha1,                \
                    const float lb0, const float lb1, const float la0, const float la1

inline void filter_weigh(const float xc, const float xs, __global float* s, const long n,
                         const float amplitude, __global float* o, FILTER_ARGS)
{
    float fc = xc, fs = xs;
    if (kind != 0 && first) {
        s[0] = xc; s[n] = xc; s[2 * n] = xc;
        s[3 * n] = xs; s[4 * n] = xs; s[5 * n] = xs;
        fc = 0.0f;
        fs = 0.0f;
    } else if (kind == 1) {
        const float high_c = (-ha1 * s[0] + hb0 * xc + hb1 * s[2 * n]) / ha0;
        const float low_c = (-la1 * s[n] + lb0 * xc + lb1 * s[2 * n]) / la0;
        const float high_s = (-ha1 * s[3 * n] + hb0 * xs + hb1 * s[5 * n]) / ha0;
        const float low_s = (-la1 * s[4 * n] + lb0 * xs + lb1 * s[5 * n]) / la0;
        s[0] = high_c; s[n] = low_c; s[2 * n] = xc;
        s[3 * n] = high_s; s[4 * n] = low_s; s[5 * n] = xs;
        fc = high_c - low_c;
        fs = high_s - low_s;
    } else if (kind == 2) {
        const float high_c = hb0 * s[0] + hb1 * xc, low_c = lb0 * s[n] + lb1 * xc;
        const float high_s = hb0 * s[3 * n] + hb1 * xs, low_s = lb0 * s[4 * n] + lb1 * xs;
        s[0] = high_c; s[n] = low_c;
        s[3 * n] = high_s; s[4 * n] = low_s;
        fc = high_c - low_c;
        fs = high_s - low_s;
    }
    const float wgt = weigh ? amplitude + 1e-12f : 1.0f;
    o[0] = fc * wgt;
    o[1] = fs * wgt;
    o[2] = wgt;
}

// filter_weigh on 8 consecutive pixels (s: their first state value, planes n apart; o: their 24 weighted
// values).
inline void filter_weigh8(const float8 xc, const float8 xs, __global float* s, const long n,
                          const float8 amplitude, __global float* o, FILTER_ARGS)
{
    float8 fc = xc, fs = xs;
    if (kind != 0 && first) {
        ST8(xc, s, 0); ST8(xc, s + n, 0); ST8(xc, s + 2 * n, 0);
        ST8(xs, s + 3 * n, 0); ST8(xs, s + 4 * n, 0); ST8(xs, s + 5 * n, 0);
        fc = (float8)(0.0f);
        fs = (float8)(0.0f);
    } else if (kind == 1) {
        const float8 pc = LD8(s + 2 * n, 0), ps = LD8(s + 5 * n, 0);
        const float8 high_c = (-ha1 * LD8(s, 0) + hb0 * xc + hb1 * pc) / ha0;
        const float8 low_c = (-la1 * LD8(s + n, 0) + lb0 * xc + lb1 * pc) / la0;
        const float8 high_s = (-ha1 * LD8(s + 3 * n, 0) + hb0 * xs + hb1 * ps) / ha0;
        const float8 low_s = (-la1 * LD8(s + 4 * n, 0) + lb0 * xs + lb1 * ps) / la0;
        ST8(high_c, s, 0); ST8(low_c, s + n, 0); ST8(xc, s + 2 * n, 0);
        ST8(high_s, s + 3 * n, 0); ST8(low_s, s + 4 * n, 0); ST8(xs, s + 5 * n, 0);
        fc = high_c - low_c;
        fs = high_s - low_s;
    } else if (kind == 2) {
        const float8 high_c = hb0 * LD8(s, 0) + hb1 * xc, low_c = lb0 * LD8(s + n, 0) + lb1 * xc;
        const float8 high_s = hb0 * LD8(s + 3 * n, 0) + hb1 * xs, low_s = lb0 * LD8(s + 4 * n, 0) + lb1 * xs;
        ST8(high_c, s, 0); ST8(low_c, s + n, 0);
        ST8(high_s, s + 3 * n, 0); ST8(low_s, s + 4 * n, 0);
        fc = high_c - low_c;
        fs = high_s - low_s;
    }
    const float8 wgt = weigh ? amplitude + 1e-12f : (float8)(1.0f);
    const float8 a = fc * wgt, b = fs * wgt;
    ST8(((float8)(a.s0, b.s0, wgt.s0, a.s1, b.s1, wgt.s1, a.s2, b.s2)), o, 0);
    ST8(((float8)(wgt.s2, a.s3, b.s3, wgt.s3, a.s4, b.s4, wgt.s4, a.s5)), o, 1);
    ST8(((float8)(b.s5, wgt.s5, a.s6, b.s6, wgt.s6, a.s7, b.s7, wgt.s7)), o, 2);
}

// riesz_expand on 8 consecutive output pixels per work item (fine rows of at least 8 pixels, coarse rows of
// at least 8 samples; the last work item of a row starts at w_out - 8, see common.cl). The vertical sums of
// the 8 coarse columns from ``base`` on are one vector sum; a tap outside them (none away from the
// borders) takes its column's sum on its own. The order of the sums is riesz_expand's.
__kernel void riesz_expand8(__global const float* src, __global float* dst, __global const float* other,
                            __global const int* ix, __global const float* wx, const int kx,
                            __global const int* iy, __global const float* wy, const int ky,
                            const int w_in, const int w_out, const int mode)
{
    const int x0 = min((int)get_global_id(0) * 8, w_out - 8);
    const int y = get_global_id(1);
    const int base = clamp(x0 / 2 - 1, 0, w_in - 8);
    float8 sums = (float8)(0.0f);
    for (int ty = 0; ty < ky; ++ty) sums += wy[y * ky + ty] * LD8(src + (long)iy[y * ky + ty] * w_in + base, 0);
    float column[8];
    vstore8(sums, 0, column);
    float out[8];
    for (int p = 0; p < 8; ++p) {
        const int x = x0 + p;
        float acc = 0.0f;
        for (int tx = 0; tx < kx; ++tx) {
            const int c = ix[x * kx + tx], j = c - base;
            float col = 0.0f;
            if (j >= 0 && j < 8) {
                col = column[j];
            } else {
                for (int ty = 0; ty < ky; ++ty) col += wy[y * ky + ty] * src[(long)iy[y * ky + ty] * w_in + c];
            }
            acc += wx[x * kx + tx] * col;
        }
        out[p] = acc;
    }
    const long o = (long)y * w_out + x0;
    float8 result = vload8(0, out);
    if (mode == 1) result = LD8(other + o, 0) + result;
    else if (mode == 2) result = LD8(other + o, 0) - result;
    ST8(result, dst + o, 0);
}

// The fade of a phase step where it is undefined (vidmag._reference.riesz.step_fade): g(|current|)
// g(|previous|) (1 - sin^2(theta / 2)^16), g = n^2 / (n^2 + PHASE_EPSILON^4) of the squared magnitude n (eps
// 1e-4), from n of both quaternions, the product's real part and its magnitude |current| |previous|.
inline float step_fade(const float nc, const float np, const float real, const float magnitude)
{
    const float gate = (nc * nc / (nc * nc + 1e-16f)) * (np * np / (np * np + 1e-16f));
    const float h = magnitude > 0.0f ? (magnitude - real) / (2.0f * magnitude) : 0.0f;  // sin^2(theta / 2)
    const float h2 = h * h, h4 = h2 * h2, h8 = h4 * h4;
    return gate * (1.0f - h8 * h8);
}

// step_fade on 8 pixels.
inline float8 step_fade8(const float8 nc, const float8 np, const float8 real, const float8 magnitude)
{
    const float8 gate = (nc * nc / (nc * nc + 1e-16f)) * (np * np / (np * np + 1e-16f));
    const float8 h = magnitude > 0.0f ? (magnitude - real) / (2.0f * magnitude) : (float8)(0.0f);
    const float8 h2 = h * h, h4 = h2 * h2, h8 = h4 * h4;
    return gate * (1.0f - h8 * h8);
}

// One level's band (h, w) -> its 3-tap Riesz transform and the step of the quaternionic phase, then (kind
// != 0) the temporal filter of the phase (filter_weigh; kind 0 leaves state and weighted alone).
// R1 (along x) and R2 (along y) correlate the band with [0.5, 0, -0.5], mirror borders (a level has at
// least 5 samples a side). With the previous frame's quaternion (qb, qx, qy) the phase difference of
// current * conj(previous) is added to the accumulated phase (phase_c, phase_s) and the amplitude
// sqrt(|current| |previous|) written; then (qb, qx, qy) take the current quaternion. first != 0: the first
// frame, whose accumulated phase is 0 and whose previous quaternion is itself.
__kernel void riesz_phase(__global const float* band, __global float* qb, __global float* qx,
                          __global float* qy, __global float* phase_c, __global float* phase_s,
                          __global float* amplitude, __global float* state, __global float* weighted,
                          const int w, const int h, FILTER_ARGS)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const long row = (long)y * w;
    const long i = row + x;
    const int xl = x > 0 ? x - 1 : 1, xr = x < w - 1 ? x + 1 : w - 2;
    const int yu = y > 0 ? y - 1 : 1, yd = y < h - 1 ? y + 1 : h - 2;
    const float b = band[i];
    const float r1 = 0.5f * band[row + xl] - 0.5f * band[row + xr];
    const float r2 = 0.5f * band[(long)yu * w + x] - 0.5f * band[(long)yd * w + x];
    const float pb = first ? b : qb[i], px = first ? r1 : qx[i], py = first ? r2 : qy[i];
    const float real = b * pb + r1 * px + r2 * py;
    const float vx = pb * r1 - b * px;
    const float vy = pb * r2 - b * py;
    const float vector = sqrt(vx * vx + vy * vy);
    const float magnitude = sqrt(real * real + vector * vector);
    const float difference = atan2(vector, real);  // acos(real / |q|), stable near 0 and pi
    const float scale = (vector > 0.0f ? difference / vector : 0.0f)
                        * step_fade(b * b + r1 * r1 + r2 * r2, pb * pb + px * px + py * py, real, magnitude);
    const float amp = sqrt(magnitude);
    const float xc = first ? 0.0f : phase_c[i] + vx * scale;
    const float xs = first ? 0.0f : phase_s[i] + vy * scale;
    amplitude[i] = amp;
    phase_c[i] = xc;
    phase_s[i] = xs;
    qb[i] = b;
    qx[i] = r1;
    qy[i] = r2;
    if (kind != 0)
        filter_weigh(xc, xs, state + i, (long)w * h, amp, weighted + i * 3, kind, first, weigh, hb0, hb1, ha0,
                     ha1, lb0, lb1, la0, la1);
}

// riesz_phase on 8 consecutive pixels of a row per work item, work item (x / 8, y), over the first
// 8 * (w / 8) pixels of each row (the kernel updates its buffers in place, so work items must not overlap:
// riesz_phase does the rest of the row).
__kernel void riesz_phase8(__global const float* band, __global float* qb, __global float* qx,
                           __global float* qy, __global float* phase_c, __global float* phase_s,
                           __global float* amplitude, __global float* state, __global float* weighted,
                           const int w, const int h, FILTER_ARGS)
{
    const int x0 = get_global_id(0) * 8;
    const int y = get_global_id(1);
    const long row = (long)y * w;
    const long i = row + x0;
    const int yu = y > 0 ? y - 1 : 1, yd = y < h - 1 ? y + 1 : h - 2;
    const float8 b = LD8(band + i, 0);
    float8 left, right;
    if (x0 > 0 && x0 + 8 < w) {
        left = LD8(band + i - 1, 0);
        right = LD8(band + i + 1, 0);
    } else {  // a row's first or last 8 pixels: the mirrored neighbours one by one
        float l[8], r[8];
        for (int k = 0; k < 8; ++k) {
            const int x = x0 + k;
            l[k] = band[row + (x > 0 ? x - 1 : 1)];
            r[k] = band[row + (x < w - 1 ? x + 1 : w - 2)];
        }
        left = vload8(0, l);
        right = vload8(0, r);
    }
    const float8 r1 = 0.5f * left - 0.5f * right;
    const float8 r2 = 0.5f * LD8(band + (long)yu * w + x0, 0) - 0.5f * LD8(band + (long)yd * w + x0, 0);
    const float8 pb = first ? b : LD8(qb + i, 0), px = first ? r1 : LD8(qx + i, 0);
    const float8 py = first ? r2 : LD8(qy + i, 0);
    const float8 real = b * pb + r1 * px + r2 * py;
    const float8 vx = pb * r1 - b * px;
    const float8 vy = pb * r2 - b * py;
    const float8 vector = sqrt(vx * vx + vy * vy);
    const float8 magnitude = sqrt(real * real + vector * vector);
    const float8 difference = atan2(vector, real);
    const float8 scale = (vector > 0.0f ? difference / vector : (float8)(0.0f))
                         * step_fade8(b * b + r1 * r1 + r2 * r2, pb * pb + px * px + py * py, real, magnitude);
    const float8 amp = sqrt(magnitude);
    const float8 xc = first ? (float8)(0.0f) : LD8(phase_c + i, 0) + vx * scale;
    const float8 xs = first ? (float8)(0.0f) : LD8(phase_s + i, 0) + vy * scale;
    ST8(amp, amplitude + i, 0);
    ST8(xc, phase_c + i, 0);
    ST8(xs, phase_s + i, 0);
    ST8(b, qb + i, 0);
    ST8(r1, qx + i, 0);
    ST8(r2, qy + i, 0);
    if (kind != 0)
        filter_weigh8(xc, xs, state + i, (long)w * h, amp, weighted + i * 3, kind, first, weigh, hb0, hb1, ha0,
                      ha1, lb0, lb1, la0, la1);
}

// filter_weigh of a stack's values at element ``offset`` on (riesz_ideal: kind 0, the band-passed phase of
// one frame), with the amplitudes riesz_phase wrote.
__kernel void riesz_filter(__global const float* phase_c, __global const float* phase_s, const long offset,
                           __global float* state, __global const float* amplitude, __global float* weighted,
                           FILTER_ARGS)
{
    const long i = get_global_id(0);
    filter_weigh(phase_c[offset + i], phase_s[offset + i], state + i, get_global_size(0), amplitude[i],
                 weighted + i * 3, kind,
                 first, weigh, hb0, hb1, ha0, ha1, lb0, lb1, la0, la1);
}

// The row pass of the amplitude-weighted blur: a level's (f_c w, f_s w, w) per pixel (w pixels a row)
// correlated along the row with the tap table (idx, wt: k taps per pixel, mirror borders), 8 pixels (24
// values) per work item, the last of a row starting at w - 8 (rows of at least 8 pixels, see common.cl).
// Away from the borders the taps are the same for every pixel (taps, radius = k / 2), so the sum is over
// whole vectors; within radius of a border each pixel takes its own mirrored taps.
__kernel void riesz_blur_rows8(__global const float* src, __global float* dst, __global const int* idx,
                               __global const float* wt, __global const float* taps, const int k, const int w)
{
    const int x0 = min((int)get_global_id(0) * 8, w - 8);
    const long row = get_global_id(1) * (long)w * 3;
    const int radius = k / 2;
    __global float* o = dst + row + x0 * 3;
    if (x0 >= radius && x0 + 7 + radius < w) {
        float8 a = (float8)(0.0f), b = (float8)(0.0f), c = (float8)(0.0f);
        for (int t = 0; t < k; ++t) {
            __global const float* v = src + row + (x0 + t - radius) * 3;
            const float wgt = taps[t];
            a += wgt * LD8(v, 0);
            b += wgt * LD8(v, 1);
            c += wgt * LD8(v, 2);
        }
        ST8(a, o, 0);
        ST8(b, o, 1);
        ST8(c, o, 2);
        return;
    }
    for (int p = 0; p < 8; ++p) {
        const int x = x0 + p;
        float a = 0.0f, b = 0.0f, c = 0.0f;
        for (int t = 0; t < k; ++t) {
            __global const float* v = src + row + idx[x * k + t] * 3;
            const float wgt = wt[x * k + t];
            a += wgt * v[0];
            b += wgt * v[1];
            c += wgt * v[2];
        }
        o[p * 3] = a;
        o[p * 3 + 1] = b;
        o[p * 3 + 2] = c;
    }
}

// The column pass of the amplitude-weighted blur (tap table iy, wy, k taps per row over the row-blurred
// (f_c w, f_s w, w) of a level, w pixels a row) and the phase shift of the pixel: riesz_shift's formula on
// the blurred values.
__kernel void riesz_blur_shift(__global const float* rows, __global const int* iy, __global const float* wy,
                               const int k, __global const float* qb, __global const float* qx,
                               __global const float* qy, __global float* out, const int w, const float alpha)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    float a = 0.0f, c = 0.0f, n = 0.0f;
    for (int t = 0; t < k; ++t) {
        const float wgt = wy[y * k + t];
        __global const float* v = rows + ((long)iy[y * k + t] * w + x) * 3;
        a += wgt * v[0];
        c += wgt * v[1];
        n += wgt * v[2];
    }
    const long i = (long)y * w + x;
    const float pc = alpha * (a / n), ps = alpha * (c / n);
    const float magnitude = sqrt(pc * pc + ps * ps);
    const float sinc = magnitude > 0.0f ? sin(magnitude) / magnitude : 1.0f;
    out[i] = cos(magnitude) * qb[i] - sinc * (pc * qx[i] + ps * qy[i]);
}

// The phase shift of one level: v = alpha * (blurred f_c w, blurred f_s w) / blurred w, and the band becomes
// the real part of exp(v) q: cos|v| b - sin|v| (v_x R1 + v_y R2) / |v| (the band itself where v = 0).
__kernel void riesz_shift(__global const float* blurred, __global const float* qb, __global const float* qx,
                          __global const float* qy, __global float* out, const float alpha)
{
    const long i = get_global_id(0);
    const float norm = blurred[i * 3 + 2];
    const float pc = alpha * (blurred[i * 3] / norm);
    const float ps = alpha * (blurred[i * 3 + 1] / norm);
    const float magnitude = sqrt(pc * pc + ps * ps);
    const float sinc = magnitude > 0.0f ? sin(magnitude) / magnitude : 1.0f;
    out[i] = cos(magnitude) * qb[i] - sinc * (pc * qx[i] + ps * qy[i]);
}

// riesz_blur_shift on 8 consecutive pixels per work item (rows of at least 8 pixels; the last work item of
// a row starts at w - 8, see common.cl).
__kernel void riesz_blur_shift8(__global const float* rows, __global const int* iy, __global const float* wy,
                                const int k, __global const float* qb, __global const float* qx,
                                __global const float* qy, __global float* out, const int w, const float alpha)
{
    const int x0 = min((int)get_global_id(0) * 8, w - 8);
    const int y = get_global_id(1);
    float8 a = (float8)(0.0f), c = (float8)(0.0f), n = (float8)(0.0f);
    for (int t = 0; t < k; ++t) {
        const float wgt = wy[y * k + t];
        __global const float* v = rows + ((long)iy[y * k + t] * w + x0) * 3;
        const float8 v0 = LD8(v, 0), v1 = LD8(v, 1), v2 = LD8(v, 2);
        DEINTERLEAVE(v0, v1, v2, A, B, N)
        a += wgt * A;
        c += wgt * B;
        n += wgt * N;
    }
    const long i = (long)y * w + x0;
    const float8 pc = alpha * (a / n), ps = alpha * (c / n);
    const float8 magnitude = sqrt(pc * pc + ps * ps);
    float8 cosine;
    const float8 sine = sincos(magnitude, &cosine);
    const float8 sinc = magnitude > 0.0f ? sine / magnitude : (float8)(1.0f);
    ST8(cosine * LD8(qb + i, 0) - sinc * (pc * LD8(qx + i, 0) + ps * LD8(qy + i, 0)), out + i, 0);
}

// The output frame: the input's I and Q (fwd: RGB bytes -> YIQ, rows 1 and 2 used) with the magnified
// luminance, back to RGB (inv) and to bytes with the MIT output handling.
__kernel void riesz_render(__global const uchar* src, __global const float* luma, __global uchar* dst,
                           __global const float* fwd, __global const float* inv)
{
    const long i = get_global_id(0);
    const long p = i * 3;
    const float r = src[p], g = src[p + 1], b = src[p + 2];
    const float y = luma[i];
    const float ci = fwd[3] * r + fwd[4] * g + fwd[5] * b;
    const float cq = fwd[6] * r + fwd[7] * g + fwd[8] * b;
    MIT_BYTES(inv[0] * y + inv[1] * ci + inv[2] * cq, inv[3] * y + inv[4] * ci + inv[5] * cq,
              inv[6] * y + inv[7] * ci + inv[8] * cq, dst + p)
}
