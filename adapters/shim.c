/* The ctypes adapter's call shim and fault reporter.
 *
 * ctypes has no half type, and passing a half by value as an integer or a float
 * silently gives wrong results, so the hp_ functions are called from here: the
 * beta bits arrive as uint16_t and are passed on as _Float16 (the documented
 * `half` on x86-64 and aarch64 with GCC and Clang). The fault reporter turns a
 * SIGSEGV / SIGBUS in the implementation under test into a record (signal,
 * address, read or write) written to a file descriptor before the process dies,
 * so the suite can say "write past the end of dx1" instead of "crashed".
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <ucontext.h>
#endif

typedef _Float16 half;
typedef void (*hp_s_fn)(half *, half *, half *, half *, int, half, int);
typedef void (*hp_p_fn)(half *, half *, half *, half *, int, half);
typedef void (*fp_s_fn)(float *, float *, float *, float *, int, float, int);
typedef void (*fp_p_fn)(float *, float *, float *, float *, int, float);

void sl1shim_hp_s(void *fn, void *dy, void *dx1, void *x1, void *x2, int length,
                  uint16_t beta_bits, int core_mask) {
    half beta;
    memcpy(&beta, &beta_bits, sizeof beta);
    ((hp_s_fn)fn)((half *)dy, (half *)dx1, (half *)x1, (half *)x2, length, beta, core_mask);
}

void sl1shim_hp_p(void *fn, void *dy, void *dx1, void *x1, void *x2, int length, uint16_t beta_bits) {
    half beta;
    memcpy(&beta, &beta_bits, sizeof beta);
    ((hp_p_fn)fn)((half *)dy, (half *)dx1, (half *)x1, (half *)x2, length, beta);
}

/* fp32 through the shim too, with beta as its bits: one calling path for both. */
void sl1shim_fp_s(void *fn, void *dy, void *dx1, void *x1, void *x2, int length,
                  uint32_t beta_bits, int core_mask) {
    float beta;
    memcpy(&beta, &beta_bits, sizeof beta);
    ((fp_s_fn)fn)((float *)dy, (float *)dx1, (float *)x1, (float *)x2, length, beta, core_mask);
}

void sl1shim_fp_p(void *fn, void *dy, void *dx1, void *x1, void *x2, int length, uint32_t beta_bits) {
    float beta;
    memcpy(&beta, &beta_bits, sizeof beta);
    ((fp_p_fn)fn)((float *)dy, (float *)dx1, (float *)x1, (float *)x2, length, beta);
}

static int report_fd = -1;

struct fault_record { int64_t signo; uint64_t address; int64_t access; /* 0 read, 1 write, -1 unknown */ };

static void on_fault(int signo, siginfo_t *info, void *context) {
    struct fault_record rec = {signo, (uint64_t)(uintptr_t)info->si_addr, -1};
#if defined(__linux__) && defined(__x86_64__)
    rec.access = (((ucontext_t *)context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    (void)context;
#endif
    if (report_fd >= 0) {
        ssize_t ignored = write(report_fd, &rec, sizeof rec);
        (void)ignored;
    }
    /* SA_RESETHAND restored the default action: returning re-runs the faulting
     * instruction, which now kills the process with the original signal. */
}

int sl1shim_install_fault_reporter(int fd) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    report_fd = fd;
    return sigaction(SIGSEGV, &sa, 0) | sigaction(SIGBUS, &sa, 0);
}
