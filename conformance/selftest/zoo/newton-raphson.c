/* honest on DSP profiles: no divider; 1/beta by Newton-Raphson from a bit-trick seed, four
 * iterations in float (within an ULP, not always correctly rounded), then diff * r * dy */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float r, ab = __builtin_fabsf(beta);
    uint32_t u;
    memcpy(&u, &beta, 4);
    if (ab > 1e-37f && ab < 1e37f) {
        uint32_t s = 0x7EF311C7u - (u & 0x7fffffffu);
        memcpy(&r, &s, 4);
        for (int k = 0; k < 4; k++) {
            float e = 2.0f - ab * r;
            r = r * e;
        }
        r = __builtin_copysignf(r, beta);
    } else {
        r = 1.0f / beta;
    }
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d * r * dy[i];
    }
}
ZOO_FP32_SHARED_AS_PRIVATE
