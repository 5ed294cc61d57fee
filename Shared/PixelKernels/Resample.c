// Separable Lanczos-3 resampling in 14-bit fixed point. Each pass multiplies 8-bit samples by
// 16-bit weights and adds them in 32 bits, two taps per SIMD multiply-add on x86-64: with AVX2,
// 32 columns of the vertical pass and two output pixels of the horizontal one per loop; without,
// 16 columns (SSE2) and one pixel (SSSE3). The scalar code computes the same sums in the same
// integers, so every path gives identical pixels.

#include "PixelKernels.h"
#include "Dispatch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { WEIGHT_BITS = 14, WEIGHT_ONE = 1 << WEIGHT_BITS, ROUNDING = 1 << (WEIGHT_BITS - 1) };

/// The kernels of one axis: output pixel i reads `taps` source pixels from `start[i]`, with weights
/// `weights[i * stride …]` (`stride` is `taps` rounded up to even; the extra weight is 0).
typedef struct {
    int *start;
    int16_t *weights;
    int taps, stride;
} axis_kernels;

static double lanczos3(double x) {
    if (x == 0) return 1;
    if (x <= -3 || x >= 3) return 0;
    double px = M_PI * x;
    return 3 * sin(px) * sin(px / 3) / (px * px);
}

static void free_kernels(axis_kernels *k) {
    free(k->start);
    free(k->weights);
}

static int make_kernels(int in_size, int out_size, axis_kernels *k) {
    double scale = (double)in_size / out_size;
    double stretch = scale > 1 ? scale : 1;
    double support = 3 * stretch;
    int taps = (int)ceil(2 * support) + 1;
    if (taps > in_size) taps = in_size;
    k->taps = taps;
    k->stride = taps + (taps & 1);
    k->start = malloc(sizeof(int) * (size_t)out_size);
    k->weights = calloc((size_t)out_size * (size_t)k->stride, sizeof(int16_t));
    double *real = malloc(sizeof(double) * (size_t)taps);
    if (!k->start || !k->weights || !real) {
        free(real);
        free_kernels(k);
        return -1;
    }
    for (int i = 0; i < out_size; i++) {
        double centre = (i + 0.5) * scale;
        int low = (int)floor(centre - support + 0.5), high = (int)floor(centre + support + 0.5);
        if (low < 0) low = 0;
        if (high > in_size) high = in_size;
        // Every window is `taps` wide, so the SIMD loads never leave the image; pixels outside
        // [low, high) get weight 0, and the weights of the pixels inside are renormalised.
        int start = low + taps > in_size ? in_size - taps : low;
        double sum = 0;
        for (int j = 0; j < taps; j++) {
            int source = start + j;
            real[j] = source >= low && source < high ? lanczos3((source + 0.5 - centre) / stretch) : 0;
            sum += real[j];
        }
        int16_t *w = k->weights + (size_t)i * (size_t)k->stride;
        int total = 0, largest = 0;
        for (int j = 0; j < taps; j++) {
            w[j] = (int16_t)lrint(real[j] / sum * WEIGHT_ONE);
            total += w[j];
            if (w[j] > w[largest]) largest = j;
        }
        // Rounding each weight may leave the sum a little off 1: the largest absorbs the rest.
        w[largest] = (int16_t)(w[largest] + WEIGHT_ONE - total);
        k->start[i] = start;
    }
    free(real);
    return 0;
}

static inline uint8_t clip8(int32_t sum) {
    int32_t v = sum >> WEIGHT_BITS;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/// Output rows [0, out_height) of `row_bytes` bytes each, columns from `from`.
static void vertical_scalar(const uint8_t *in, uint8_t *out, size_t row_bytes, size_t from,
                            const axis_kernels *k, int out_height) {
    for (int y = 0; y < out_height; y++) {
        const int16_t *w = k->weights + (size_t)y * (size_t)k->stride;
        const uint8_t *source = in + (size_t)k->start[y] * row_bytes;
        uint8_t *target = out + (size_t)y * row_bytes;
        for (size_t x = from; x < row_bytes; x++) {
            int32_t sum = ROUNDING;
            for (int j = 0; j < k->taps; j++) sum += w[j] * source[(size_t)j * row_bytes + x];
            target[x] = clip8(sum);
        }
    }
}

static void horizontal_scalar(const uint8_t *in, uint8_t *out, int in_width, int out_width,
                              int height, int bands, const axis_kernels *k) {
    for (int y = 0; y < height; y++) {
        const uint8_t *row = in + (size_t)y * (size_t)in_width * (size_t)bands;
        uint8_t *target = out + (size_t)y * (size_t)out_width * (size_t)bands;
        for (int x = 0; x < out_width; x++) {
            const int16_t *w = k->weights + (size_t)x * (size_t)k->stride;
            const uint8_t *source = row + (size_t)k->start[x] * (size_t)bands;
            for (int b = 0; b < bands; b++) {
                int32_t sum = ROUNDING;
                for (int j = 0; j < k->taps; j++) sum += w[j] * source[j * bands + b];
                target[x * bands + b] = clip8(sum);
            }
        }
    }
}

#if defined(__x86_64__)
/// Two weights as the int16 pair a multiply-add wants, in one 32-bit lane.
static inline int32_t weight_bits(const int16_t *w) {
    int32_t pair;
    memcpy(&pair, w, sizeof pair);
    return pair;
}

/// Two weights, repeated over the register.
static inline __m128i weight_pair(const int16_t *w) { return _mm_set1_epi32(weight_bits(w)); }

/// 16 columns at a time from column `from`: rows j and j + 1 interleaved byte by byte, widened to
/// 16 bits, each pair multiplied by its two weights and added in one instruction. Returns the
/// first column left for the scalar code.
static size_t vertical_sse2(const uint8_t *in, uint8_t *out, size_t row_bytes, size_t from,
                            const axis_kernels *k, int out_height) {
    const __m128i zero = _mm_setzero_si128(), rounding = _mm_set1_epi32(ROUNDING);
    size_t simd_bytes = from + ((row_bytes - from) & ~(size_t)15);
    for (int y = 0; y < out_height; y++) {
        const int16_t *w = k->weights + (size_t)y * (size_t)k->stride;
        const uint8_t *source = in + (size_t)k->start[y] * row_bytes;
        uint8_t *target = out + (size_t)y * row_bytes;
        for (size_t x = from; x < simd_bytes; x += 16) {
            __m128i s0 = rounding, s1 = rounding, s2 = rounding, s3 = rounding;
            for (int j = 0; j < k->taps; j += 2) {
                const uint8_t *first = source + (size_t)j * row_bytes + x;
                // An odd last tap pairs with itself; its partner's weight is 0.
                const uint8_t *second = j + 1 < k->taps ? first + row_bytes : first;
                __m128i a = _mm_loadu_si128((const __m128i *)first);
                __m128i b = _mm_loadu_si128((const __m128i *)second);
                __m128i pairs = weight_pair(w + j);
                __m128i low = _mm_unpacklo_epi8(a, b), high = _mm_unpackhi_epi8(a, b);
                s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi8(low, zero), pairs));
                s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi8(low, zero), pairs));
                s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_unpacklo_epi8(high, zero), pairs));
                s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_unpackhi_epi8(high, zero), pairs));
            }
            __m128i words01 = _mm_packs_epi32(_mm_srai_epi32(s0, WEIGHT_BITS), _mm_srai_epi32(s1, WEIGHT_BITS));
            __m128i words23 = _mm_packs_epi32(_mm_srai_epi32(s2, WEIGHT_BITS), _mm_srai_epi32(s3, WEIGHT_BITS));
            _mm_storeu_si128((__m128i *)(target + x), _mm_packus_epi16(words01, words23));
        }
    }
    return simd_bytes;
}

/// Two source pixels of an 8-byte read shuffled into (band of pixel j, same band of pixel j + 1)
/// int16 pairs, for 3 or 4 bands.
static inline __m128i horizontal_shuffle(int bands) {
    return bands == 3 ? _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1)
                      : _mm_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1);
}

/// Writes the low `bands` bytes of `packed`, one output pixel.
static inline void store_pixel(uint8_t *target, uint32_t packed, int bands) {
    for (int b = 0; b < bands; b++) target[b] = (uint8_t)(packed >> (8 * b));
}

/// One output pixel from `source` with weights `w`, two taps per multiply-add, its bands packed
/// into the low bytes. Reads up to 2 bytes past a 3-band row's last pixel, which the caller's
/// buffer has room for.
__attribute__((target("ssse3")))
static inline uint32_t horizontal_pixel(const uint8_t *source, const int16_t *w, int taps, int bands, __m128i shuffle) {
    const __m128i rounding = _mm_set1_epi32(ROUNDING);
    __m128i sum = rounding;
    for (int j = 0; j < taps; j += 2) {
        __m128i pixels = _mm_loadl_epi64((const __m128i *)(source + j * bands));
        sum = _mm_add_epi32(sum, _mm_madd_epi16(_mm_shuffle_epi8(pixels, shuffle), weight_pair(w + j)));
    }
    __m128i words = _mm_packs_epi32(_mm_srai_epi32(sum, WEIGHT_BITS), rounding);
    return (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(words, words));
}

/// One output pixel of 3 or 4 bands per loop (`horizontal_pixel`).
__attribute__((target("ssse3")))
static void horizontal_ssse3(const uint8_t *in, uint8_t *out, int in_width, int out_width,
                             int height, int bands, const axis_kernels *k) {
    const __m128i shuffle = horizontal_shuffle(bands);
    for (int y = 0; y < height; y++) {
        const uint8_t *row = in + (size_t)y * (size_t)in_width * (size_t)bands;
        uint8_t *target = out + (size_t)y * (size_t)out_width * (size_t)bands;
        for (int x = 0; x < out_width; x++) {
            const int16_t *w = k->weights + (size_t)x * (size_t)k->stride;
            const uint8_t *source = row + (size_t)k->start[x] * (size_t)bands;
            store_pixel(target + x * bands, horizontal_pixel(source, w, k->taps, bands, shuffle), bands);
        }
    }
}

/// `vertical_sse2` 32 columns at a time: each 128-bit lane does what SSE2 does to 16 columns (the
/// unpacks and packs stay within their lane).
__attribute__((target("avx2")))
static size_t vertical_avx2(const uint8_t *in, uint8_t *out, size_t row_bytes,
                            const axis_kernels *k, int out_height) {
    const __m256i zero = _mm256_setzero_si256(), rounding = _mm256_set1_epi32(ROUNDING);
    size_t simd_bytes = row_bytes & ~(size_t)31;
    for (int y = 0; y < out_height; y++) {
        const int16_t *w = k->weights + (size_t)y * (size_t)k->stride;
        const uint8_t *source = in + (size_t)k->start[y] * row_bytes;
        uint8_t *target = out + (size_t)y * row_bytes;
        for (size_t x = 0; x < simd_bytes; x += 32) {
            __m256i s0 = rounding, s1 = rounding, s2 = rounding, s3 = rounding;
            for (int j = 0; j < k->taps; j += 2) {
                const uint8_t *first = source + (size_t)j * row_bytes + x;
                const uint8_t *second = j + 1 < k->taps ? first + row_bytes : first;
                __m256i a = _mm256_loadu_si256((const __m256i *)first);
                __m256i b = _mm256_loadu_si256((const __m256i *)second);
                __m256i pairs = _mm256_set1_epi32(weight_bits(w + j));
                __m256i low = _mm256_unpacklo_epi8(a, b), high = _mm256_unpackhi_epi8(a, b);
                s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_unpacklo_epi8(low, zero), pairs));
                s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_unpackhi_epi8(low, zero), pairs));
                s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(_mm256_unpacklo_epi8(high, zero), pairs));
                s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(_mm256_unpackhi_epi8(high, zero), pairs));
            }
            __m256i words01 = _mm256_packs_epi32(_mm256_srai_epi32(s0, WEIGHT_BITS), _mm256_srai_epi32(s1, WEIGHT_BITS));
            __m256i words23 = _mm256_packs_epi32(_mm256_srai_epi32(s2, WEIGHT_BITS), _mm256_srai_epi32(s3, WEIGHT_BITS));
            _mm256_storeu_si256((__m256i *)(target + x), _mm256_packus_epi16(words01, words23));
        }
    }
    return simd_bytes;
}

/// `horizontal_ssse3` two output pixels per loop, one in each 128-bit lane, each with its own
/// weights; an odd last pixel is done alone (`horizontal_pixel`).
__attribute__((target("avx2")))
static void horizontal_avx2(const uint8_t *in, uint8_t *out, int in_width, int out_width,
                            int height, int bands, const axis_kernels *k) {
    const __m128i shuffle = horizontal_shuffle(bands);
    const __m256i shuffles = _mm256_broadcastsi128_si256(shuffle);
    const __m256i rounding = _mm256_set1_epi32(ROUNDING);
    for (int y = 0; y < height; y++) {
        const uint8_t *row = in + (size_t)y * (size_t)in_width * (size_t)bands;
        uint8_t *target = out + (size_t)y * (size_t)out_width * (size_t)bands;
        int x = 0;
        for (; x + 1 < out_width; x += 2) {
            const int16_t *w0 = k->weights + (size_t)x * (size_t)k->stride, *w1 = w0 + k->stride;
            const uint8_t *source0 = row + (size_t)k->start[x] * (size_t)bands;
            const uint8_t *source1 = row + (size_t)k->start[x + 1] * (size_t)bands;
            __m256i sum = rounding;
            for (int j = 0; j < k->taps; j += 2) {
                __m256i pixels = _mm256_inserti128_si256(
                    _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(source0 + j * bands))),
                    _mm_loadl_epi64((const __m128i *)(source1 + j * bands)), 1);
                __m256i pairs = _mm256_inserti128_si256(_mm256_set1_epi32(weight_bits(w0 + j)), weight_pair(w1 + j), 1);
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_shuffle_epi8(pixels, shuffles), pairs));
            }
            __m256i words = _mm256_packs_epi32(_mm256_srai_epi32(sum, WEIGHT_BITS), rounding);
            __m256i bytes = _mm256_packus_epi16(words, words);
            store_pixel(target + x * bands, (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(bytes)), bands);
            store_pixel(target + (x + 1) * bands, (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(bytes, 1)), bands);
        }
        if (x < out_width) {
            const int16_t *w = k->weights + (size_t)x * (size_t)k->stride;
            const uint8_t *source = row + (size_t)k->start[x] * (size_t)bands;
            store_pixel(target + x * bands, horizontal_pixel(source, w, k->taps, bands, shuffle), bands);
        }
    }
}
#endif

int splash_resize_lanczos3(const uint8_t *in, int in_width, int in_height, int bands,
                           uint8_t *out, int out_width, int out_height) {
    if (in_width < 1 || in_height < 1 || out_width < 1 || out_height < 1 || bands < 1) return -1;
    axis_kernels rows, columns;
    if (make_kernels(in_height, out_height, &rows)) return -1;
    if (make_kernels(in_width, out_width, &columns)) {
        free_kernels(&rows);
        return -1;
    }
    size_t row_bytes = (size_t)in_width * (size_t)bands;
    // The vertical pass's result, with room for the horizontal pass's 8-byte reads at its end.
    // The pass writes every byte but that room (zeroing it all cost a memset of the whole buffer:
    // after the first, glibc serves a block this size from its heap, not fresh zero pages).
    size_t between_bytes = row_bytes * (size_t)out_height;
    uint8_t *between = malloc(between_bytes + 16);
    if (!between) {
        free_kernels(&rows);
        free_kernels(&columns);
        return -1;
    }
    memset(between + between_bytes, 0, 16);
    size_t done = 0;
#if defined(__x86_64__)
    int level = splash_kernels_level();
    if (level >= SPLASH_KERNELS_AVX2) done = vertical_avx2(in, between, row_bytes, &rows, out_height);
    if (level >= SPLASH_KERNELS_SSE) done = vertical_sse2(in, between, row_bytes, done, &rows, out_height);
#endif
    vertical_scalar(in, between, row_bytes, done, &rows, out_height);
#if defined(__x86_64__)
    if (level >= SPLASH_KERNELS_AVX2 && (bands == 3 || bands == 4)) {
        horizontal_avx2(between, out, in_width, out_width, out_height, bands, &columns);
    } else if (level >= SPLASH_KERNELS_SSE && (bands == 3 || bands == 4)) {
        horizontal_ssse3(between, out, in_width, out_width, out_height, bands, &columns);
    } else {
        horizontal_scalar(between, out, in_width, out_width, out_height, bands, &columns);
    }
#else
    horizontal_scalar(between, out, in_width, out_width, out_height, bands, &columns);
#endif
    free(between);
    free_kernels(&rows);
    free_kernels(&columns);
    return 0;
}
