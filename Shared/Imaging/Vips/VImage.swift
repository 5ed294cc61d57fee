import CVips

/// One libvips image, owned: the reference is released when this object goes, so no path — a
/// thrown error included — leaks an image. Operations return new images and leave this one as it
/// is. Not `Sendable`: an image lives inside the one render that made it.
final class VImage {
    typealias Pointer = UnsafeMutablePointer<VipsImage>
    typealias Output = UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>

    let pointer: Pointer

    /// Takes ownership of a reference the caller holds.
    init(owning pointer: Pointer) {
        self.pointer = pointer
    }

    deinit {
        splash_g_object_unref(pointer)
    }

    var width: Int { Int(vips_image_get_width(pointer)) }
    var height: Int { Int(vips_image_get_height(pointer)) }
    var bands: Int { Int(vips_image_get_bands(pointer)) }
    var format: VipsBandFormat { vips_image_get_format(pointer) }
    var interpretation: VipsInterpretation { vips_image_get_interpretation(pointer) }

    /// Runs one libvips operation that writes a new image to its output argument.
    /// - Throws: `VipsFailure` with libvips' message when the operation fails.
    static func make(_ operation: (Output) -> Int32) throws(VipsFailure) -> VImage {
        try VipsRuntime.ensureStarted()
        var out: Pointer?
        guard operation(&out) == 0, let out else { throw VipsFailure.take() }
        return VImage(owning: out)
    }

    /// `operation` applied to this image.
    func map(_ operation: (Pointer, Output) -> Int32) throws(VipsFailure) -> VImage {
        try VImage.make { operation(pointer, $0) }
    }

    /// An 8-bit image of `bands` bands over `pixels` (row by row, bands interleaved).
    static func fromPixels(_ pixels: [UInt8], width: Int, height: Int, bands: Int) throws(VipsFailure) -> VImage {
        try VipsRuntime.ensureStarted()
        precondition(pixels.count == width * height * bands)
        let pointer = pixels.withUnsafeBytes { bytes in
            vips_image_new_from_memory_copy(bytes.baseAddress, bytes.count, Int32(width), Int32(height), Int32(bands), VIPS_FORMAT_UCHAR)
        }
        guard let pointer else { throw VipsFailure.take() }
        return try VImage(owning: pointer).map {
            splash_vips_copy_interpretation($0, $1, bands >= 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W)
        }
    }

    /// Computes the whole pipeline behind this image once, into memory, so that encoding it
    /// several times (the quality bisection) does not compute it again.
    /// An image already in memory is returned as it is.
    func materialized() throws(VipsFailure) -> VImage {
        if splash_vips_is_in_memory(pointer) != 0 { return self }
        guard let copy = vips_image_copy_memory(pointer) else { throw VipsFailure.take() }
        return VImage(owning: copy)
    }

    /// The pixels as bytes, row by row with bands interleaved, in the image's band format.
    func pixelBytes() throws(VipsFailure) -> [UInt8] {
        var size = 0
        guard let memory = vips_image_write_to_memory(pointer, &size) else { throw VipsFailure.take() }
        defer { splash_g_free(memory) }
        return Array(UnsafeRawBufferPointer(start: memory, count: size))
    }

    /// Runs an encoder that returns a g_malloc'ed buffer, and copies the buffer out.
    func encode(
        _ encoder: (Pointer, UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws(VipsFailure) -> [UInt8] {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard encoder(pointer, &buffer, &length) == 0, let buffer else { throw VipsFailure.take() }
        defer { splash_g_free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }
}
