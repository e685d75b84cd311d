/* honest on DSP profiles: the FPU's flush-to-zero mode set for the whole call, as a DSP runs (x86:
 * MXCSR's DAZ and FTZ bits; aarch64: FPCR.FZ), restored on return; other targets flush in software */
#include "zoo.h"
static unsigned long enter(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned csr, flushing;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    flushing = csr | 0x8040u;
    __asm__ volatile("ldmxcsr %0" : : "m"(flushing));
    return csr;
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (1ul << 24)));
    return fpcr;
#else
    return 0;
#endif
}
static void leave(unsigned long saved)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned csr = (unsigned)saved;
    __asm__ volatile("ldmxcsr %0" : : "m"(csr));
#elif defined(__aarch64__)
    __asm__ volatile("msr fpcr, %0" : : "r"(saved));
#else
    (void)saved;
#endif
}
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    unsigned long saved = enter();
    for (int i = 0; i < n; i++) {
        volatile float d = x1[i] - x2[i]; /* the arithmetic in the flushing FPU, not folded */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
        dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];
#else
        dx1[i] = zoo_fz(zoo_divmul(zoo_fz(d), zoo_fz(beta), zoo_fz(dy[i])));
#endif
    }
    leave(saved);
}
ZOO_FP32_SHARED_AS_PRIVATE
