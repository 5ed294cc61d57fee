#ifndef SPLASH_CVIPS_SHIM_H
#define SPLASH_CVIPS_SHIM_H

// libvips' operations take their optional arguments as NULL-terminated varargs, which Swift cannot
// call. Each wrapper below fixes the arguments Splash uses; `Imaging` calls only these.

#include <vips/vips.h>

static inline int splash_vips_init(void) { return VIPS_INIT("splash"); }

static inline void splash_g_free(void *pointer) { g_free(pointer); }

static inline void splash_g_object_unref(VipsImage *image) { g_object_unref(image); }

static inline VipsImage *splash_vips_header_from_buffer(const void *data, size_t size) {
    return vips_image_new_from_buffer(data, size, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

static inline VipsImage *splash_vips_header_from_file(const char *path) {
    return vips_image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

static inline int splash_vips_has_icc_profile(VipsImage *image) {
    return vips_image_get_typeof(image, VIPS_META_ICC_NAME) != 0;
}

static inline int splash_vips_orientation(VipsImage *image) {
    return vips_image_get_orientation(image);
}

/// Decodes with shrink-on-load to fit `size`×`size` (never enlarging), applies the EXIF orientation,
/// and turns an embedded ICC profile into sRGB. Fails on a truncated or corrupt file — any decoder
/// warning, as sharp does by default, so damaged data is refused rather than rendered as grey. In libvips
/// 8.14 the thumbnail's own `fail_on` does not reach a buffer's loader, its option string does.
static inline int splash_vips_thumbnail_buffer(void *data, size_t length, VipsImage **out, int size, int has_profile) {
    if (has_profile) {
        return vips_thumbnail_buffer(data, length, out, size, "height", size, "size", VIPS_SIZE_DOWN,
                                     "export_profile", "srgb", "option_string", "fail_on=warning", NULL);
    }
    return vips_thumbnail_buffer(data, length, out, size, "height", size, "size", VIPS_SIZE_DOWN,
                                 "option_string", "fail_on=warning", NULL);
}

/// Decodes with shrink-on-load to exactly `width`×`height` or within it: `crop` fills the box and
/// cuts the overflow from the centre, `force` stretches to it; neither enlarges unless `force`.
/// Orientation, ICC profile and damaged files as `splash_vips_thumbnail_buffer`.
static inline int splash_vips_thumbnail_box(void *data, size_t length, VipsImage **out, int width, int height, int crop, int force,
                                            int has_profile) {
    VipsSize size = force ? VIPS_SIZE_FORCE : VIPS_SIZE_DOWN;
    VipsInteresting interesting = crop ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE;
    if (has_profile) {
        return vips_thumbnail_buffer(data, length, out, width, "height", height, "size", size, "crop", interesting,
                                     "export_profile", "srgb", "option_string", "fail_on=warning", NULL);
    }
    return vips_thumbnail_buffer(data, length, out, width, "height", height, "size", size, "crop", interesting,
                                 "option_string", "fail_on=warning", NULL);
}

/// The `width`×`height` area of `in` whose top left corner is at (`left`, `top`).
static inline int splash_vips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    return vips_extract_area(in, out, left, top, width, height, NULL);
}

/// Decodes a JPEG at 1/`shrink` of its size (the DCT scaling of libjpeg: 1, 2, 4 or 8), refusing
/// a truncated or corrupt file (any decoder warning).
static inline int splash_vips_jpegload_shrunk(void *data, size_t length, VipsImage **out, int shrink) {
    return vips_jpegload_buffer(data, length, out, "shrink", shrink, "fail_on", VIPS_FAIL_ON_WARNING, NULL);
}

/// Applies the EXIF orientation.
static inline int splash_vips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

/// The embedded ICC profile's colours in sRGB.
static inline int splash_vips_icc_to_srgb(VipsImage *in, VipsImage **out) {
    return vips_icc_transform(in, out, "srgb", "embedded", TRUE, NULL);
}

/// Lanczos-3 resampling by separate horizontal and vertical factors (both ≤ 1 here).
static inline int splash_vips_resize2(VipsImage *in, VipsImage **out, double hscale, double vscale) {
    return vips_resize(in, out, hscale, "vscale", vscale, NULL);
}

/// A new `width`×`height` image in memory whose pixels the caller writes through `splash_vips_pixels`
/// before anything reads it (as libvips' own `vips_image_new_matrix` does). NULL if out of memory.
static inline VipsImage *splash_vips_new_pixels(int width, int height, int bands, VipsBandFormat format,
                                                VipsInterpretation interpretation) {
    VipsImage *image = vips_image_new_memory();
    vips_image_init_fields(image, width, height, bands, format, VIPS_CODING_NONE, interpretation, 1.0, 1.0);
    if (vips_image_write_prepare(image)) {
        g_object_unref(image);
        return NULL;
    }
    return image;
}

/// The first pixel of an image whose pixels are in memory (rows back to back, bands interleaved);
/// an image that is not yet is computed into memory first. NULL if that fails.
static inline void *splash_vips_pixels(VipsImage *image) {
    if (vips_image_wio_input(image)) return NULL;
    return VIPS_IMAGE_ADDR(image, 0, 0);
}

/// Whether the image's pixels are a buffer in memory already (nothing left to compute).
static inline int splash_vips_is_in_memory(VipsImage *image) {
    return image->dtype == VIPS_IMAGE_SETBUF || image->dtype == VIPS_IMAGE_SETBUF_FOREIGN;
}

static inline int splash_vips_thumbnail_image(VipsImage *in, VipsImage **out, int size) {
    return vips_thumbnail_image(in, out, size, "height", size, "size", VIPS_SIZE_DOWN, "no_rotate", TRUE, NULL);
}

static inline int splash_vips_colourspace(VipsImage *in, VipsImage **out, VipsInterpretation space) {
    return vips_colourspace(in, out, space, NULL);
}

static inline int splash_vips_cast(VipsImage *in, VipsImage **out, VipsBandFormat format) {
    return vips_cast(in, out, format, NULL);
}

static inline int splash_vips_extract_band(VipsImage *in, VipsImage **out, int band, int n) {
    return vips_extract_band(in, out, band, "n", n, NULL);
}

static inline int splash_vips_bandjoin2(VipsImage *left, VipsImage *right, VipsImage **out) {
    return vips_bandjoin2(left, right, out, NULL);
}

static inline int splash_vips_flatten_white(VipsImage *in, VipsImage **out) {
    double white[3] = {255, 255, 255};
    VipsArrayDouble *background = vips_array_double_new(white, 3);
    int result = vips_flatten(in, out, "background", background, NULL);
    vips_area_unref(VIPS_AREA(background));
    return result;
}

static inline int splash_vips_gaussblur(VipsImage *in, VipsImage **out, double sigma) {
    return vips_gaussblur(in, out, sigma, "precision", VIPS_PRECISION_FLOAT, NULL);
}

/// An unsharp mask on L* only: every difference scaled by `amount`, none clamped.
static inline int splash_vips_sharpen(VipsImage *in, VipsImage **out, double sigma, double amount) {
    return vips_sharpen(in, out, "sigma", sigma, "x1", 0.0, "y2", 100.0, "y3", 100.0,
                        "m1", amount, "m2", amount, NULL);
}

static inline int splash_vips_copy_interpretation(VipsImage *in, VipsImage **out, VipsInterpretation space) {
    return vips_copy(in, out, "interpretation", space, NULL);
}

/// Baseline JPEG with optimised Huffman tables and 4:2:0 chroma at every quality, as libjpeg, Pillow
/// and sharp default to (libvips alone turns subsampling off from quality 90, which doubles the
/// encode's time and the file's colour data for a difference the eye rarely sees at 1080 px).
static inline int splash_vips_jpegsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, "optimize_coding", TRUE,
                                "subsample_mode", VIPS_FOREIGN_SUBSAMPLE_ON, NULL);
}

static inline int splash_vips_webpsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_webpsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, NULL);
}

/// AVIF (AV1 in HEIF, libheif with libaom): 8-bit, metadata stripped, at CPU effort 2 of 9 (a
/// 2560 px photo in about a quarter of a second on one core; effort 4 takes four times as long
/// for a file about 15 % smaller).
static inline int splash_vips_avifsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_heifsave_buffer(in, buffer, length, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
                                "bitdepth", 8, "effort", 2, "strip", TRUE, NULL);
}

static inline int splash_vips_pngsave_buffer(VipsImage *in, void **buffer, size_t *length) {
    return vips_pngsave_buffer(in, buffer, length, "strip", TRUE, NULL);
}

/// A copy of `in` tagged with an EXIF orientation (tests make rotated photos with it).
static inline int splash_vips_copy_with_orientation(VipsImage *in, VipsImage **out, int orientation) {
    if (vips_copy(in, out, NULL)) return -1;
    vips_image_set_int(*out, VIPS_META_ORIENTATION, orientation);
    return 0;
}

/// Progressive JPEG (tests make sources with it).
static inline int splash_vips_jpegsave_progressive_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, "interlace", TRUE, NULL);
}

/// JPEG keeping the image's metadata (tests make sources with it).
static inline int splash_vips_jpegsave_buffer_keeping_metadata(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, NULL);
}

#endif
