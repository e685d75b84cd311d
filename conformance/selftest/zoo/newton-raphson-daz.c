/* honest on DSP profiles: issue 36's reference library, what a DSP engineer writes from the manual
 * for a chip without a divider and with DAZ. 1/beta by Newton-Raphson, three fused steps
 * (e = fma(-b, r, 1), r = fma(r, e, r)) from a bit-trick seed; then d * inv * dy in float.
 * Subnormal inputs (dy, x1, x2, beta) are read as zero in software (DAZ); results and
 * intermediates are IEEE arithmetic's, subnormals kept (no FTZ).
 *
 * The reciprocal is within 1 ULP of the correctly rounded 1/b for every float b, and not always
 * correctly rounded (1,320 of the 2^23 mantissas are 1 ULP off): checked for every positive
 * float b, exhaustively, against the host's correctly rounded 1.0f / b (the seed's relative error is
 * at most 0.0506, so three steps leave about 0.0506^8, far under an ULP; the last rounding
 * decides). tests/test_nr_daz_library.py repeats the check on every mantissa of the first,
 * the last and a middle binade of the steps' range, and on the extremes.
 *
 * The zoo has no libm: where the target has a fused multiply-add (__FP_FAST_FMAF: aarch64, x86
 * with -mfma) __builtin_fmaf is one instruction; elsewhere GCC would call libm's fmaf, so the
 * fused step is emulated exactly: the product in double is exact (24 + 24 bits), the sum is
 * rounded to odd in double (TwoSum gives the error, then an inexact even sum steps to its odd
 * neighbour toward the exact value), and rounding that to float is the correctly rounded
 * result (53 >= 24 + 2 bits). Finite operands only, which is all the steps pass it. */
#include "zoo.h"

static float fused(float a, float b, float c)
{
#ifdef __FP_FAST_FMAF
    return __builtin_fmaf(a, b, c);
#else
    double p = (double)a * (double)b, s = p + (double)c;
    double pb = s - (double)c, err = (p - pb) + ((double)c - (s - pb));
    if (err != 0.0) {
        uint64_t u;
        memcpy(&u, &s, 8);
        if (!(u & 1u)) {
            u += (err > 0.0) == (s > 0.0) ? 1u : (uint64_t)-1; /* toward the exact sum */
            memcpy(&s, &u, 8);
        }
    }
    return (float)s;
#endif
}

/* 1/b without a division. Outside [2^-126, 2^126) the seed leaves the normal range: 0, infinity
 * and NaN are answered outright, and b >= 2^126 goes through b / 4 (the product by 1/4 rounds
 * once into the subnormal range, still within 1 ULP). */
static float nr_reciprocal(float b)
{
    float ab = __builtin_fabsf(b), r, e, scale = 1.0f;
    uint32_t u;
    if (ab != ab)
        return b;
    if (ab == 0.0f)
        return __builtin_copysignf(__builtin_inff(), b);
    if (ab == __builtin_inff())
        return __builtin_copysignf(0.0f, b);
    if (ab >= 0x1p126f) {
        ab *= 0.25f;
        scale = 0.25f;
    }
    memcpy(&u, &ab, 4);
    u = 0x7EF311C7u - u; /* the seed: the exponent negated, the mantissa roughly; within 5.06% */
    memcpy(&r, &u, 4);
    for (int k = 0; k < 3; k++) {
        e = fused(-ab, r, 1.0f);
        r = fused(r, e, r);
    }
    return __builtin_copysignf(r * scale, b);
}

void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float b = zoo_fz(beta), inv = nr_reciprocal(b);
    for (int i = 0; i < n; i++) {
        float d = zoo_fz(x1[i]) - zoo_fz(x2[i]), g = zoo_fz(dy[i]);
        dx1[i] = d > b ? g : d < -b ? -g : d * inv * g;
    }
}
ZOO_FP32_SHARED_AS_PRIVATE
