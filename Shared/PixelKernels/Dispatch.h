#ifndef SPLASH_PIXEL_KERNELS_DISPATCH_H
#define SPLASH_PIXEL_KERNELS_DISPATCH_H

/// Whether `splash_kernels_force_scalar(1)` is in effect.
int splash_kernels_scalar_only(void);

/// Whether this CPU has SSSE3 (x86-64 only; 0 elsewhere).
int splash_cpu_has_ssse3(void);

#endif
