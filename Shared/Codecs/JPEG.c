#include "Codecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

/// libjpeg's error manager, made to return instead of exiting the process: an error, or any
/// warning (a damaged file decodes with grey where its data is missing), jumps back to the call.
typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
} failure_manager;

static void fail(j_common_ptr info) {
    failure_manager *manager = (failure_manager *)info->err;
    char text[JMSG_LENGTH_MAX];
    (*info->err->format_message)(info, text);
    snprintf(manager->message, SPLASH_CODEC_MESSAGE_SIZE, "%s", text);
    longjmp(manager->jump, 1);
}

/// Level −1 is a warning (corrupt data); higher levels are trace messages, which are ignored.
static void emit(j_common_ptr info, int level) {
    if (level < 0) fail(info);
}

static void install(failure_manager *manager, char *message) {
    jpeg_std_error(&manager->base);
    manager->base.error_exit = fail;
    manager->base.emit_message = emit;
    manager->message = message;
    message[0] = 0;
}

/// Reads the header and sets up the scaled RGB decode; false when libvips should take the file.
static int prepare(struct jpeg_decompress_struct *info, const uint8_t *data, size_t size, int shrink) {
    jpeg_mem_src(info, data, (unsigned long)size);
    jpeg_read_header(info, TRUE);
    if (info->jpeg_color_space != JCS_YCbCr && info->jpeg_color_space != JCS_GRAYSCALE && info->jpeg_color_space != JCS_RGB) {
        return 0;
    }
    info->out_color_space = JCS_RGB;
    info->scale_num = 1;
    info->scale_denom = (unsigned int)shrink;
    return 1;
}

/// libjpeg's scaled size rounds up, keeping a last row or column that only part of the source's
/// pixels fill; libvips (8.14) rounds down, dropping it, and so does Splash, for the same pixels.
static void scaled_size(const struct jpeg_decompress_struct *info, int shrink, int *width, int *height) {
    *width = (int)(info->image_width / (unsigned int)shrink);
    *height = (int)(info->image_height / (unsigned int)shrink);
    if (*width < 1) *width = 1;
    if (*height < 1) *height = 1;
}

splash_codec_result splash_jpeg_scaled_size(const uint8_t *data, size_t size, int shrink, int *width, int *height,
                                            char message[SPLASH_CODEC_MESSAGE_SIZE]) {
    struct jpeg_decompress_struct info;
    failure_manager manager;
    info.err = &manager.base;
    install(&manager, message);
    if (setjmp(manager.jump)) {
        jpeg_destroy_decompress(&info);
        return SPLASH_CODEC_FAILED;
    }
    jpeg_create_decompress(&info);
    splash_codec_result result = SPLASH_CODEC_UNSUPPORTED;
    if (prepare(&info, data, size, shrink)) {
        scaled_size(&info, shrink, width, height);
        result = SPLASH_CODEC_OK;
    }
    jpeg_destroy_decompress(&info);
    return result;
}

splash_codec_result splash_jpeg_decode(const uint8_t *data, size_t size, int shrink, uint8_t *pixels, int width, int height,
                                       char message[SPLASH_CODEC_MESSAGE_SIZE]) {
    struct jpeg_decompress_struct info;
    failure_manager manager;
    info.err = &manager.base;
    install(&manager, message);
    // Every row, when libjpeg's are wider than `width`, goes through here.
    // On the heap, so that the pointer set after `setjmp` is still there after an error's jump.
    uint8_t **scratch = calloc(1, sizeof *scratch);
    if (!scratch) {
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "out of memory");
        return SPLASH_CODEC_FAILED;
    }
    if (setjmp(manager.jump)) {
        jpeg_destroy_decompress(&info);
        free(*scratch);
        free(scratch);
        return SPLASH_CODEC_FAILED;
    }
    jpeg_create_decompress(&info);
    int expected_width = 0, expected_height = 0;
    if (!prepare(&info, data, size, shrink)) {
        jpeg_destroy_decompress(&info);
        free(scratch);
        return SPLASH_CODEC_UNSUPPORTED;
    }
    scaled_size(&info, shrink, &expected_width, &expected_height);
    if (expected_width != width || expected_height != height) {
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "decodes to %d×%d, not %d×%d", expected_width, expected_height, width, height);
        jpeg_destroy_decompress(&info);
        free(scratch);
        return SPLASH_CODEC_FAILED;
    }
    jpeg_start_decompress(&info);
    size_t stride = (size_t)width * 3, decoded_stride = (size_t)info.output_width * 3;
    int wider = info.output_width > (JDIMENSION)width;
    enum { group = 16 };
    if (wider) {
        *scratch = malloc(decoded_stride * group);
        if (!*scratch) ERREXIT1(&info, JERR_OUT_OF_MEMORY, 0);
    }
    // The rows kept and no more, as libvips reads them: damage only in a dropped last row, or
    // after the last row before the end marker, is not looked for, by libvips or here.
    while (info.output_scanline < (JDIMENSION)height) {
        JSAMPROW rows[group];
        JDIMENSION first = info.output_scanline, count = (JDIMENSION)height - first;
        if (count > group) count = group;
        for (JDIMENSION row = 0; row < count; row++) {
            rows[row] = wider ? *scratch + row * decoded_stride : pixels + (size_t)(first + row) * stride;
        }
        JDIMENSION read = jpeg_read_scanlines(&info, rows, count);
        for (JDIMENSION row = 0; wider && row < read; row++) memcpy(pixels + (size_t)(first + row) * stride, rows[row], stride);
    }
    jpeg_destroy_decompress(&info);
    free(*scratch);
    free(scratch);
    return SPLASH_CODEC_OK;
}

/// libjpeg's output into one buffer that doubles as it fills; ours to free on every path (libjpeg's
/// own memory destination loses track of its buffer when an error jumps out of a write).
typedef struct {
    struct jpeg_destination_mgr base;
    uint8_t *buffer;
    size_t capacity;
    size_t length;
} growing_destination;

static void start_destination(j_compress_ptr info) {
    growing_destination *destination = (growing_destination *)info->dest;
    destination->base.next_output_byte = destination->buffer;
    destination->base.free_in_buffer = destination->capacity;
}

static boolean grow_destination(j_compress_ptr info) {
    growing_destination *destination = (growing_destination *)info->dest;
    uint8_t *larger = realloc(destination->buffer, destination->capacity * 2);
    if (!larger) ERREXIT1(info, JERR_OUT_OF_MEMORY, 0);
    destination->buffer = larger;
    destination->base.next_output_byte = larger + destination->capacity;
    destination->base.free_in_buffer = destination->capacity;
    destination->capacity *= 2;
    return TRUE;
}

static void finish_destination(j_compress_ptr info) {
    growing_destination *destination = (growing_destination *)info->dest;
    destination->length = destination->capacity - destination->base.free_in_buffer;
}

splash_codec_result splash_jpeg_encode(const uint8_t *pixels, int width, int height, size_t stride, int bands, int quality,
                                       uint8_t **out, size_t *out_size, char message[SPLASH_CODEC_MESSAGE_SIZE]) {
    message[0] = 0;
    if (bands != 1 && bands != 3) {
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "JPEG takes 1 or 3 bands, not %d", bands);
        return SPLASH_CODEC_FAILED;
    }
    // On the heap, so that what libjpeg's writes change is still there after an error's jump.
    growing_destination *destination = calloc(1, sizeof *destination);
    // A tenth of the raw pixels is more than most photos need at quality 90.
    size_t capacity = (size_t)width * (size_t)height * (size_t)bands / 10 + 4096;
    uint8_t *buffer = destination ? malloc(capacity) : NULL;
    if (!buffer) {
        free(destination);
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "out of memory for %d×%d pixels", width, height);
        return SPLASH_CODEC_FAILED;
    }
    destination->base.init_destination = start_destination;
    destination->base.empty_output_buffer = grow_destination;
    destination->base.term_destination = finish_destination;
    destination->buffer = buffer;
    destination->capacity = capacity;
    struct jpeg_compress_struct info;
    failure_manager manager;
    info.err = &manager.base;
    install(&manager, message);
    if (setjmp(manager.jump)) {
        jpeg_destroy_compress(&info);
        free(destination->buffer);
        free(destination);
        return SPLASH_CODEC_FAILED;
    }
    jpeg_create_compress(&info);
    info.dest = &destination->base;
    info.image_width = (JDIMENSION)width;
    info.image_height = (JDIMENSION)height;
    info.input_components = bands;
    info.in_color_space = bands == 3 ? JCS_RGB : JCS_GRAYSCALE;
    // The defaults are baseline and 4:2:0 for colour; no JFIF header, as libvips writes none.
    jpeg_set_defaults(&info);
    info.write_JFIF_header = FALSE;
    jpeg_set_quality(&info, quality, TRUE);
    info.optimize_coding = TRUE;
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)info.next_scanline * stride);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    *out = destination->buffer;
    *out_size = destination->length;
    free(destination);
    return SPLASH_CODEC_OK;
}

void splash_jpeg_free(uint8_t *buffer) { free(buffer); }
