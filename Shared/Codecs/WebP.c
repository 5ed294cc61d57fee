#include "Codecs.h"

#include <stdio.h>

#include <webp/encode.h>

splash_codec_result splash_webp_encode(const uint8_t *pixels, int width, int height, size_t stride, int bands, int quality,
                                       uint8_t **out, size_t *out_size, char message[SPLASH_CODEC_MESSAGE_SIZE]) {
    message[0] = 0;
    if (bands != 3 && bands != 4) {
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "WebP takes 3 or 4 bands here, not %d", bands);
        return SPLASH_CODEC_FAILED;
    }
    WebPConfig config;
    WebPPicture picture;
    WebPMemoryWriter writer;
    if (!WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, (float)quality) || !WebPPictureInit(&picture)) {
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "libwebp's version does not match its header");
        return SPLASH_CODEC_FAILED;
    }
    picture.width = width;
    picture.height = height;
    int imported = bands == 3 ? WebPPictureImportRGB(&picture, pixels, (int)stride)
                              : WebPPictureImportRGBA(&picture, pixels, (int)stride);
    if (!imported) {
        WebPPictureFree(&picture);
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "out of memory for %d×%d pixels", width, height);
        return SPLASH_CODEC_FAILED;
    }
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    int encoded = WebPEncode(&config, &picture);
    WebPPictureFree(&picture);
    if (!encoded) {
        WebPMemoryWriterClear(&writer);
        snprintf(message, SPLASH_CODEC_MESSAGE_SIZE, "libwebp could not encode the image (error %d)", picture.error_code);
        return SPLASH_CODEC_FAILED;
    }
    *out = writer.mem;
    *out_size = writer.size;
    return SPLASH_CODEC_OK;
}

void splash_webp_free(uint8_t *buffer) { WebPFree(buffer); }
