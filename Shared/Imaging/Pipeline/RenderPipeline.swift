import CVips
import Contracts

/// The whole render, synchronously on the calling thread: header check → shrink-on-load thumbnail
/// to the output size (EXIF orientation applied, an embedded ICC profile converted to sRGB) → the
/// filter chain on float sRGB → 8-bit sRGB with metadata stripped → encoded within the byte budget.
///
/// Call it from a thread that may block (see `Renderer`), and let that thread call
/// `VipsRuntime.releaseThreadState()` when it is done with libvips.
package enum RenderPipeline {
    /// - Throws: `ImagingError` saying why the source cannot be rendered.
    package static func render(_ source: [UInt8], filters: FilterChain, output: OutputRules, limits: SourceLimits = SourceLimits()) throws(ImagingError) -> RenderedImage {
        let header = try SourceInspection.inspect(source, limits: limits)
        let decoded: VImage
        do {
            decoded = try thumbnail(source, edge: output.longestEdge, hasProfile: header.hasICCProfile)
        } catch {
            throw .unreadable(error.message)
        }
        do {
            let filtered = try applyFilters(filters, to: decoded, keepAlpha: output.format == .webp)
            return try ByteBudgetEncoder.encode(filtered.materialized(), rules: output)
        } catch {
            throw .renderFailed(error.message)
        }
    }

    /// Decodes at (or just above) the output size and resizes to fit `edge`×`edge`, into memory: a
    /// damaged file fails here, as a decoding failure, and the filters read pixels that are ready.
    /// - Parameter hasProfile: whether the source embeds an ICC profile, when its header has
    ///   been read already; `nil` reads it here.
    static func thumbnail(_ source: [UInt8], edge: Int, hasProfile: Bool? = nil) throws(VipsFailure) -> VImage {
        try VipsRuntime.ensureStarted()
        let hasProfile = hasProfile ?? source.withUnsafeBytes { bytes -> Bool in
            guard let header = splash_vips_header_from_buffer(bytes.baseAddress, bytes.count) else { return false }
            return VImage(owning: header).hasICCProfile
        }
        // The loader reads `source` in place, so the pixels are all decoded before it goes.
        let decoded = source.withUnsafeBytes { bytes in
            Result { () throws(VipsFailure) -> VImage in
                try VImage.make { splash_vips_thumbnail_buffer(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count, $0, Int32(edge), hasProfile ? 1 : 0) }
                    .materialized()
            }
        }
        return try decoded.get()
    }

    /// 8-bit sRGB, three bands (plus alpha when `keepAlpha`), after the chain ran on float values.
    static func applyFilters(_ filters: FilterChain, to decoded: VImage, keepAlpha: Bool) throws(VipsFailure) -> VImage {
        var image = decoded
        if image.interpretation != VIPS_INTERPRETATION_sRGB || image.format != VIPS_FORMAT_UCHAR {
            image = try image.map { splash_vips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        }
        var alpha: VImage?
        if image.bands > 3 {
            if keepAlpha {
                alpha = try image.band(3)
                image = try image.map { splash_vips_extract_band($0, $1, 0, 3) }
            } else {
                image = try image.map { splash_vips_flatten_white($0, $1) }
            }
        }
        if !filters.stages.isEmpty {
            let scale = Double(image.width) / 1080
            var working = try image.map { splash_vips_cast($0, $1, VIPS_FORMAT_FLOAT) }
            for stage in filters.stages {
                working = try stage.apply(to: working, width1080Scale: scale)
            }
            // Round to the nearest level; the cast clips to 0…255.
            image = try working.linear(scale: [1, 1, 1], shift: [0.5, 0.5, 0.5]).map { splash_vips_cast($0, $1, VIPS_FORMAT_UCHAR) }
        }
        if let alpha {
            let (colour, alphaBand) = (image, try alpha.map { splash_vips_cast($0, $1, VIPS_FORMAT_UCHAR) })
            image = try VImage.make { splash_vips_bandjoin2(colour.pointer, alphaBand.pointer, $0) }
        }
        return try image.map { splash_vips_copy_interpretation($0, $1, VIPS_INTERPRETATION_sRGB) }
    }
}

extension VImage {
    var hasICCProfile: Bool { splash_vips_has_icc_profile(pointer) != 0 }
}
