#ifndef SPLASH_PIXEL_KERNELS_H
#define SPLASH_PIXEL_KERNELS_H

// The render's per-pixel work, written for the CPU caches and SIMD units instead of as one libvips
// operation per step: a separable Lanczos-3 resampler in 14-bit fixed point, and the point filters
// (colour matrices, tone curves, vibrance, vignette) fused into one pass over each row.
// Images are row-major with bands interleaved and no padding between rows.

#include <stddef.h>
#include <stdint.h>

/// Resamples `in` (`in_width`×`in_height`, `bands` 8-bit bands) to `out_width`×`out_height` into
/// `out` with a Lanczos-3 kernel stretched over the source pixels one output pixel covers: vertical
/// pass first, then horizontal, each rounded and clipped to 8 bits. Every kernel's weights sum to
/// exactly 1, so a flat colour stays exactly that colour.
/// Returns 0, or -1 when memory for the weights or the intermediate image cannot be had.
int splash_resize_lanczos3(const uint8_t *in, int in_width, int in_height, int bands,
                           uint8_t *out, int out_width, int out_height);

typedef enum {
    SPLASH_KERNELS_SCALAR = 0,
    /// SSE2 and SSSE3, 128 bits.
    SPLASH_KERNELS_SSE = 1,
    /// 256 bits.
    SPLASH_KERNELS_AVX2 = 2,
} splash_kernels_level_t;

/// Keeps the kernels at `level` or below (the CPU's best is used up to it; AVX2, the default,
/// allows all), so tests can hold each SIMD path to the scalar code's result.
void splash_kernels_limit(splash_kernels_level_t level);

typedef enum {
    /// c' = m·c + offset (m row-major 3×3, offset in 0…255 units).
    SPLASH_STAGE_AFFINE = 0,
    /// c' = table[round(clamp(c, 0, 255) · 65535 / 255)], each band alone (`table`: 65,536 values).
    SPLASH_STAGE_CURVE = 1,
    /// avg, mx = mean and max of the bands; t = (mx − avg)·`amount`; c' = c + (mx − c)·t.
    SPLASH_STAGE_VIBRANCE = 2,
    /// c' = c·(1 − intensity·smoothstep(inner, outer, d)), d the distance of the pixel's centre
    /// from the image's centre over the half-diagonal.
    SPLASH_STAGE_VIGNETTE = 3,
} splash_stage_kind;

typedef struct {
    splash_stage_kind kind;
    float matrix[9];
    float offset[3];
    /// Vibrance: −3·amount/255. Vignette: the intensity.
    float amount;
    /// Vignette: smoothstep's edges, in half-diagonals.
    float inner, outer;
    /// Curve: 65,536 outputs in 0…255.
    const float *table;
} splash_point_stage;

/// Runs `stages` in order over every pixel of a three-band image, values kept in float between
/// stages and never clamped there (a curve clamps its own input). `in` holds 8-bit values when
/// `in_is_float` is 0, else floats in 0…255 units; `out` likewise by `out_is_float`, 8-bit output
/// rounded to the nearest level and clipped to 0…255.
/// Returns 0, or -1 when memory for a row cannot be had.
int splash_point_chain(const void *in, int in_is_float, void *out, int out_is_float,
                       int width, int height, const splash_point_stage *stages, int count);

#endif
