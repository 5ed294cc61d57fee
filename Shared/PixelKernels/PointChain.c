// The point filters of a render in one pass: each row is split into three float planes once,
// every stage runs over those planes while they sit in the L1 cache (plain loops the compiler
// vectorises, compiled twice: for x86-64's baseline and, chosen at run time, for AVX2, without
// FMA so that both round alike), and the row is rounded and interleaved back once. libvips ran
// one operation per stage over the whole image in float: several full-image passes per stage.

#include "PixelKernels.h"
#include "Dispatch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Every stage inlines into `run_chain`, and `run_chain` into `chain_avx2` and the baseline entry.
#define INLINE static inline __attribute__((always_inline))

typedef struct {
    float *restrict r, *restrict g, *restrict b;
} planes;

INLINE void affine(planes p, int width, const splash_point_stage *s) {
    const float *m = s->matrix;
    for (int x = 0; x < width; x++) {
        float r = p.r[x], g = p.g[x], b = p.b[x];
        p.r[x] = m[0] * r + m[1] * g + m[2] * b + s->offset[0];
        p.g[x] = m[3] * r + m[4] * g + m[5] * b + s->offset[1];
        p.b[x] = m[6] * r + m[7] * g + m[8] * b + s->offset[2];
    }
}

INLINE void curve(float *restrict values, int count, const float *restrict table) {
    for (int i = 0; i < count; i++) {
        float index = values[i] * (65535.0f / 255.0f) + 0.5f;
        // Written so that a NaN lands on 0.
        index = index > 0 ? index : 0;
        index = index < 65535 ? index : 65535;
        values[i] = table[(int)index];
    }
}

INLINE void vibrance(planes p, int width, float amount) {
    for (int x = 0; x < width; x++) {
        float r = p.r[x], g = p.g[x], b = p.b[x];
        float average = (r + g + b) / 3;
        float maximum = fmaxf(r, fmaxf(g, b));
        float t = (maximum - average) * amount;
        p.r[x] = r + (maximum - r) * t;
        p.g[x] = g + (maximum - g) * t;
        p.b[x] = b + (maximum - b) * t;
    }
}

INLINE void vignette(planes p, int width, int height, int y, const splash_point_stage *s) {
    float dy = y + 0.5f - height / 2.0f;
    float scale = 4 / ((float)width * width + (float)height * height);
    // A zero-width edge is a step at `outer`.
    float span = s->outer - s->inner;
    float inner = span > 0 ? s->inner : s->outer, slope = span > 0 ? 1 / span : 1e30f;
    for (int x = 0; x < width; x++) {
        float dx = x + 0.5f - width / 2.0f;
        float d = sqrtf((dx * dx + dy * dy) * scale);
        float t = (d - inner) * slope;
        t = t > 0 ? t : 0;
        t = t < 1 ? t : 1;
        float factor = 1 - s->amount * t * t * (3 - 2 * t);
        p.r[x] *= factor;
        p.g[x] *= factor;
        p.b[x] *= factor;
    }
}

INLINE uint8_t round8(float value) {
    float v = value + 0.5f;
    // Written so that a NaN lands on 0.
    v = v > 0 ? v : 0;
    v = v < 255 ? v : 255;
    return (uint8_t)v;
}

INLINE int run_chain(const void *in, int in_is_float, void *out, int out_is_float,
                     int width, int height, const splash_point_stage *stages, int count) {
    float *buffer = malloc(sizeof(float) * 3 * (size_t)width);
    if (!buffer) return -1;
    planes p = {buffer, buffer + width, buffer + 2 * (size_t)width};
    for (int y = 0; y < height; y++) {
        size_t first = (size_t)y * 3 * (size_t)width;
        if (in_is_float) {
            const float *source = (const float *)in + first;
            for (int x = 0; x < width; x++) {
                p.r[x] = source[3 * x], p.g[x] = source[3 * x + 1], p.b[x] = source[3 * x + 2];
            }
        } else {
            const uint8_t *source = (const uint8_t *)in + first;
            for (int x = 0; x < width; x++) {
                p.r[x] = source[3 * x], p.g[x] = source[3 * x + 1], p.b[x] = source[3 * x + 2];
            }
        }
        for (int s = 0; s < count; s++) {
            const splash_point_stage *stage = stages + s;
            switch (stage->kind) {
            case SPLASH_STAGE_AFFINE: affine(p, width, stage); break;
            case SPLASH_STAGE_CURVE: curve(buffer, 3 * width, stage->table); break;
            case SPLASH_STAGE_VIBRANCE: vibrance(p, width, stage->amount); break;
            case SPLASH_STAGE_VIGNETTE: vignette(p, width, height, y, stage); break;
            }
        }
        if (out_is_float) {
            float *target = (float *)out + first;
            for (int x = 0; x < width; x++) {
                target[3 * x] = p.r[x], target[3 * x + 1] = p.g[x], target[3 * x + 2] = p.b[x];
            }
        } else {
            uint8_t *target = (uint8_t *)out + first;
            for (int x = 0; x < width; x++) {
                target[3 * x] = round8(p.r[x]), target[3 * x + 1] = round8(p.g[x]), target[3 * x + 2] = round8(p.b[x]);
            }
        }
    }
    free(buffer);
    return 0;
}

#if defined(__x86_64__)
__attribute__((target("avx2")))
static int chain_avx2(const void *in, int in_is_float, void *out, int out_is_float,
                      int width, int height, const splash_point_stage *stages, int count) {
    return run_chain(in, in_is_float, out, out_is_float, width, height, stages, count);
}
#endif

int splash_point_chain(const void *in, int in_is_float, void *out, int out_is_float,
                       int width, int height, const splash_point_stage *stages, int count) {
    if (width < 1 || height < 1) return -1;
#if defined(__x86_64__)
    if (splash_kernels_level() >= SPLASH_KERNELS_AVX2) {
        return chain_avx2(in, in_is_float, out, out_is_float, width, height, stages, count);
    }
#endif
    return run_chain(in, in_is_float, out, out_is_float, width, height, stages, count);
}
