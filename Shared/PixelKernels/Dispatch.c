#include "PixelKernels.h"
#include "Dispatch.h"

#include <stdatomic.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static atomic_int scalar_only;

void splash_kernels_force_scalar(int scalar) { atomic_store(&scalar_only, scalar != 0); }

int splash_kernels_scalar_only(void) { return atomic_load(&scalar_only); }

int splash_cpu_has_ssse3(void) {
#if defined(__x86_64__)
    // -1 until asked once; CPUID answers the same every time, so a race only asks twice.
    static atomic_int known = -1;
    int value = atomic_load(&known);
    if (value < 0) {
        unsigned a, b, c, d;
        value = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) ? 1 : 0;
        atomic_store(&known, value);
    }
    return value;
#else
    return 0;
#endif
}
