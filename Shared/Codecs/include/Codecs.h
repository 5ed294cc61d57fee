#ifndef SPLASH_CODECS_H
#define SPLASH_CODECS_H

// JPEG (libjpeg-turbo) and WebP (libwebp) straight between bytes and pixels in memory, for the
// render's common case: libvips' loaders and savers hand each image to a worker thread of their
// own and wait for it, and at a tile's size that hand-off costs as much as the codec. Pixels are
// 8-bit, row-major, bands interleaved; a row may be longer than its pixels (`stride` bytes).
// Everything else — an ICC profile, CMYK, a rotated photo, other formats — stays with libvips.

#include <stddef.h>
#include <stdint.h>

typedef enum {
    SPLASH_CODEC_OK = 0,
    /// The file is fine but not one this codec takes (a CMYK or YCCK JPEG): use libvips.
    SPLASH_CODEC_UNSUPPORTED = 1,
    /// The file is damaged, or memory ran out; `message` says which.
    SPLASH_CODEC_FAILED = -1,
} splash_codec_result;

/// libjpeg's longest message, and room to spare.
#define SPLASH_CODEC_MESSAGE_SIZE 256

/// The size a JPEG decodes to with libjpeg's DCT scaling by 1/`shrink` (1, 2, 4 or 8), read from
/// its header alone: each side divided and rounded down, as libvips' loader gives it (libjpeg's own
/// scaled size rounds up, to a last row and column that only part of the source fills).
splash_codec_result splash_jpeg_scaled_size(const uint8_t *data, size_t size, int shrink, int *width, int *height,
                                            char message[SPLASH_CODEC_MESSAGE_SIZE]);

/// Decodes a JPEG at 1/`shrink` into `pixels` as RGB (a greyscale file too), `width`×`height` as
/// `splash_jpeg_scaled_size` gave them. Any warning from libjpeg — a truncated or corrupt file —
/// fails the decode, as libvips' `fail_on=warning` does; like libvips, it reads no further than
/// the last row it keeps.
splash_codec_result splash_jpeg_decode(const uint8_t *data, size_t size, int shrink, uint8_t *pixels, int width, int height,
                                       char message[SPLASH_CODEC_MESSAGE_SIZE]);

/// Baseline JPEG of 1 (grey) or 3 (RGB) bands at `quality`, 4:2:0, Huffman tables optimised, no
/// metadata (not even a JFIF header): libvips' `jpegsave` with `strip`, `optimize_coding` and
/// subsampling on. Free `*out` with `splash_jpeg_free`.
splash_codec_result splash_jpeg_encode(const uint8_t *pixels, int width, int height, size_t stride, int bands, int quality,
                                       uint8_t **out, size_t *out_size, char message[SPLASH_CODEC_MESSAGE_SIZE]);

/// Lossy WebP of 3 (RGB) or 4 (RGBA) bands at `quality`, libwebp's default preset and effort
/// (method 4): libvips' `webpsave` with `strip`, without its extended header (VP8X) when there is
/// no alpha: the simple format, which every WebP decoder reads. Free `*out` with `splash_webp_free`.
splash_codec_result splash_webp_encode(const uint8_t *pixels, int width, int height, size_t stride, int bands, int quality,
                                       uint8_t **out, size_t *out_size, char message[SPLASH_CODEC_MESSAGE_SIZE]);

void splash_jpeg_free(uint8_t *buffer);
void splash_webp_free(uint8_t *buffer);

#endif
