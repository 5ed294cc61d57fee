#ifndef SPLASH_PIXEL_KERNELS_DISPATCH_H
#define SPLASH_PIXEL_KERNELS_DISPATCH_H

#include "PixelKernels.h"

/// The SIMD level the kernels use: the best this CPU has (x86-64 only; scalar elsewhere), no
/// higher than `splash_kernels_limit` allows.
splash_kernels_level_t splash_kernels_level(void);

#endif
