import CVips
import Codecs

/// JPEG and WebP through libjpeg-turbo and libwebp themselves (`Shared/Codecs`), for the images
/// most renders see: a JPEG without an ICC profile or a turn, and 8-bit sRGB pixels to encode.
/// libvips' loaders and savers run each image through a sink that hands it to a worker thread and
/// waits; at a tile's size that hand-off costs about what the codec does. The same libraries with
/// the same settings give libvips' pixels, JPEG bytes and WebP image data (`DirectCodecsTests`);
/// a WebP leaves out the EXIF chunk libvips 8.14 writes even when told to strip (its resolution
/// and orientation tags), and with it the extended header an opaque image then needs no more.
enum DirectCodecs {
    /// A JPEG decoded at 1/`shrink` (libjpeg's DCT scaling: 1, 2, 4 or 8) into an RGB image in
    /// memory, or nil when the file's colours are CMYK or YCCK, which libvips converts.
    /// - Throws: `VipsFailure` with libjpeg's message for a damaged or truncated file (any warning).
    static func decodeJPEG(_ data: UnsafeRawBufferPointer, shrink: Int) throws(VipsFailure) -> VImage? {
        let bytes = data.bindMemory(to: UInt8.self)
        var message = [CChar](repeating: 0, count: Int(SPLASH_CODEC_MESSAGE_SIZE))
        var (width, height): (Int32, Int32) = (0, 0)
        switch splash_jpeg_scaled_size(bytes.baseAddress, bytes.count, Int32(shrink), &width, &height, &message) {
        case SPLASH_CODEC_OK: break
        case SPLASH_CODEC_UNSUPPORTED: return nil
        default: throw VipsFailure(message: text(of: message))
        }
        var result = SPLASH_CODEC_OK
        let image = try VImage.filled(width: Int(width), height: Int(height), bands: 3, format: VIPS_FORMAT_UCHAR) { pixels in
            result = splash_jpeg_decode(
                bytes.baseAddress,
                bytes.count,
                Int32(shrink),
                pixels.assumingMemoryBound(to: UInt8.self),
                width,
                height,
                &message
            )
            return true
        }
        guard result == SPLASH_CODEC_OK else { throw VipsFailure(message: text(of: message)) }
        return image
    }

    /// The image as a JPEG (libvips' `splash_vips_jpegsave_buffer`), or nil when it is not 8-bit
    /// grey or sRGB.
    static func jpeg(_ image: VImage, quality: Int) throws(VipsFailure) -> [UInt8]? {
        guard image.format == VIPS_FORMAT_UCHAR, image.bands == 3 || image.bands == 1,
            image.interpretation == VIPS_INTERPRETATION_sRGB || image.interpretation == VIPS_INTERPRETATION_B_W
        else { return nil }
        return try encode(image, quality: quality, with: splash_jpeg_encode, free: splash_jpeg_free)
    }

    /// The image as a WebP (libvips' `splash_vips_webpsave_buffer`), or nil when it is not 8-bit
    /// sRGB, with or without alpha.
    static func webp(_ image: VImage, quality: Int) throws(VipsFailure) -> [UInt8]? {
        guard image.format == VIPS_FORMAT_UCHAR, image.bands == 3 || image.bands == 4, image.interpretation == VIPS_INTERPRETATION_sRGB
        else { return nil }
        return try encode(image, quality: quality, with: splash_webp_encode, free: splash_webp_free)
    }

    /// A codec's message: the bytes before its terminating zero, as UTF-8.
    private static func text(of message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private typealias Encoder = (
        UnsafePointer<UInt8>?, Int32, Int32, Int, Int32, Int32,
        UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<CChar>?
    ) -> splash_codec_result

    private static func encode(
        _ image: VImage,
        quality: Int,
        with encoder: Encoder,
        free: (UnsafeMutablePointer<UInt8>?) -> Void
    ) throws(VipsFailure) -> [UInt8] {
        let (width, height, bands) = (image.width, image.height, image.bands)
        return try image.withPixels { pixels throws(VipsFailure) in
            var message = [CChar](repeating: 0, count: Int(SPLASH_CODEC_MESSAGE_SIZE))
            var output: UnsafeMutablePointer<UInt8>?
            var length = 0
            let result = encoder(
                pixels.assumingMemoryBound(to: UInt8.self),
                Int32(width),
                Int32(height),
                width * bands,
                Int32(bands),
                Int32(quality),
                &output,
                &length,
                &message
            )
            guard result == SPLASH_CODEC_OK, let output else { throw VipsFailure(message: text(of: message)) }
            defer { free(output) }
            return Array(UnsafeBufferPointer(start: output, count: length))
        }
    }
}

extension VImage {
    /// Baseline JPEG, 4:2:0, optimised Huffman tables, metadata stripped: libjpeg directly when
    /// `DirectCodecs` takes the image, else libvips' saver with the same settings.
    func jpegEncoded(quality: Int) throws(VipsFailure) -> [UInt8] {
        if let bytes = try DirectCodecs.jpeg(self, quality: quality) { return bytes }
        return try encode { splash_vips_jpegsave_buffer($0, $1, $2, Int32(quality)) }
    }

    /// Lossy WebP at libwebp's default effort, metadata stripped: libwebp directly when
    /// `DirectCodecs` takes the image, else libvips' saver with the same settings.
    func webpEncoded(quality: Int) throws(VipsFailure) -> [UInt8] {
        if let bytes = try DirectCodecs.webp(self, quality: quality) { return bytes }
        return try encode { splash_vips_webpsave_buffer($0, $1, $2, Int32(quality)) }
    }
}
