import CVips
import PixelKernels

/// Images whose pixels Splash's own kernels (`PixelKernels`) read and write directly in memory.
extension VImage {
    /// A new `width`×`height` image in memory, its pixels written by `fill` (given the first byte;
    /// rows back to back, bands interleaved), which returns false when it could not.
    static func filled(
        width: Int,
        height: Int,
        bands: Int,
        format: VipsBandFormat,
        interpretation: VipsInterpretation = VIPS_INTERPRETATION_sRGB,
        by fill: (UnsafeMutableRawPointer) -> Bool
    ) throws(VipsFailure) -> VImage {
        try VipsRuntime.ensureStarted()
        guard let pointer = splash_vips_new_pixels(Int32(width), Int32(height), Int32(bands), format, interpretation) else {
            throw VipsFailure.take()
        }
        let image = VImage(owning: pointer)
        guard let pixels = splash_vips_pixels(pointer) else { throw VipsFailure.take() }
        guard fill(pixels) else { throw VipsFailure(message: "out of memory for \(width)×\(height) pixels") }
        return image
    }

    /// Runs `body` over this image's pixels in memory, computed into memory first if they are not.
    func withPixels<Value>(_ body: (UnsafeRawPointer) throws(VipsFailure) -> Value) throws(VipsFailure) -> Value {
        guard let pixels = splash_vips_pixels(pointer) else { throw VipsFailure.take() }
        return try body(pixels)
    }

    /// Lanczos-3 to exactly `width`×`height` (`splash_resize_lanczos3`) for 8-bit images; other
    /// formats go through libvips' `resize`, with the same kernel.
    func resampled(width targetWidth: Int, height targetHeight: Int) throws(VipsFailure) -> VImage {
        guard format == VIPS_FORMAT_UCHAR else {
            return try map { splash_vips_resize2($0, $1, Double(targetWidth) / Double(width), Double(targetHeight) / Double(height)) }
        }
        let (sourceWidth, sourceHeight, bands) = (width, height, self.bands)
        return try withPixels { source throws(VipsFailure) in
            try VImage.filled(width: targetWidth, height: targetHeight, bands: bands, format: VIPS_FORMAT_UCHAR, interpretation: interpretation) {
                target in
                splash_resize_lanczos3(
                    source.assumingMemoryBound(to: UInt8.self),
                    Int32(sourceWidth),
                    Int32(sourceHeight),
                    Int32(bands),
                    target.assumingMemoryBound(to: UInt8.self),
                    Int32(targetWidth),
                    Int32(targetHeight)
                ) == 0
            }
        }
    }
}

extension VImage {
    /// The `width`×`height` area whose top left corner is at (`left`, `top`), in memory: rows
    /// copied for an 8-bit image, libvips' `extract_area` for any other.
    func cropped(left: Int, top: Int, width areaWidth: Int, height areaHeight: Int) throws(VipsFailure) -> VImage {
        guard format == VIPS_FORMAT_UCHAR else {
            return try map { splash_vips_extract_area($0, $1, Int32(left), Int32(top), Int32(areaWidth), Int32(areaHeight)) }.materialized()
        }
        guard left >= 0, top >= 0, areaWidth > 0, areaHeight > 0, left + areaWidth <= width, top + areaHeight <= height else {
            throw VipsFailure(message: "the area \(areaWidth)×\(areaHeight) at (\(left), \(top)) is outside the \(width)×\(height) image")
        }
        let (stride, bands) = (width * self.bands, self.bands)
        return try withPixels { source throws(VipsFailure) in
            try VImage.filled(width: areaWidth, height: areaHeight, bands: bands, format: VIPS_FORMAT_UCHAR, interpretation: interpretation) {
                target in
                for row in 0..<areaHeight {
                    (target + row * areaWidth * bands).copyMemory(from: source + (top + row) * stride + left * bands, byteCount: areaWidth * bands)
                }
                return true
            }
        }
    }
}
