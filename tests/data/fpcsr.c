/* The calling thread's floating-point control register, for tests/conftest.py's guard against a
 * test that leaves flushing (or another mode) switched on in pytest's main thread: x86-64's MXCSR
 * (FTZ 0x8000, DAZ 0x40, the rounding mode, the exception masks), aarch64's FPCR (FZ, the
 * rounding mode). sl1_fpcsr_kind() is 0 where neither is there (the guard is then off). */
unsigned long sl1_fpcsr_kind(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return 1;
#elif defined(__aarch64__)
    return 2;
#else
    return 0;
#endif
}

unsigned long sl1_fpcsr_get(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned int csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    return csr;
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
#else
    return 0;
#endif
}

void sl1_fpcsr_set(unsigned long value)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned int csr = (unsigned int)value;
    __asm__ volatile("ldmxcsr %0" : : "m"(csr));
#elif defined(__aarch64__)
    __asm__ volatile("msr fpcr, %0" : : "r"(value));
#else
    (void)value;
#endif
}
