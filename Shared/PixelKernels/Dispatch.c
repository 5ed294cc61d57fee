#include "PixelKernels.h"
#include "Dispatch.h"

#include <stdatomic.h>

static atomic_int limit = SPLASH_KERNELS_AVX2;

void splash_kernels_limit(splash_kernels_level_t level) { atomic_store(&limit, level); }

/// The best level this CPU has, asked once: CPUID answers the same every time, so a race only
/// asks twice.
static splash_kernels_level_t cpu_level(void) {
#if defined(__x86_64__)
    static atomic_int known = -1;
    int value = atomic_load(&known);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("avx2") ? SPLASH_KERNELS_AVX2
            : __builtin_cpu_supports("ssse3")  ? SPLASH_KERNELS_SSE
                                               : SPLASH_KERNELS_SCALAR;
        atomic_store(&known, value);
    }
    return (splash_kernels_level_t)value;
#else
    return SPLASH_KERNELS_SCALAR;
#endif
}

splash_kernels_level_t splash_kernels_level(void) {
    int allowed = atomic_load(&limit);
    splash_kernels_level_t best = cpu_level();
    return best < allowed ? best : (splash_kernels_level_t)allowed;
}
