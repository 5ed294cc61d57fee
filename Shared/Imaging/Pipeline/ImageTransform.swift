import CVips

/// A sized copy of a stored image, as Supabase Storage's image transformations ask for one:
/// a box (`width`, `height`, either may be left out to keep the aspect ratio), how the image meets
/// it, a quality and a format. A transform never enlarges past the original.
package struct ImageTransform: Sendable, Hashable {
    package enum Resize: String, Sendable, CaseIterable {
        /// Fills the box, cutting what overflows from the centre (the default).
        case cover
        /// Fits inside the box.
        case contain
        /// Stretches to the box.
        case fill
    }

    package enum Format: String, Sendable {
        case jpeg, webp, png, avif

        package var mediaType: String { "image/\(rawValue)" }
    }

    package static let sides = 1...2500
    package static let qualities = 20...100

    package var width: Int?
    package var height: Int?
    package var resize: Resize
    package var quality: Int
    package var format: Format

    package init(width: Int? = nil, height: Int? = nil, resize: Resize = .cover, quality: Int = 80, format: Format) {
        self.width = width
        self.height = height
        self.resize = resize
        self.quality = quality
        self.format = format
    }

    /// AVIF's quality scale is steeper than JPEG's and WebP's: the asked quality times 5/8, so
    /// the default 80 is AVIF's 50 (sharp's default) and a tile comes out smaller than its WebP.
    var avifQuality: Int { max(1, (quality * 5 + 4) / 8) }

    /// The size of the answer for an upright source of `width`×`height`.
    package func size(ofUpright source: (width: Int, height: Int)) -> (width: Int, height: Int) {
        let (sourceWidth, sourceHeight) = (Double(source.width), Double(source.height))
        func scaled(_ value: Double, _ factor: Double) -> Int { max(1, Int((value * factor).rounded())) }
        switch (width, height) {
        case (nil, nil):
            return source
        case (let box?, nil):
            let factor = min(1, Double(box) / sourceWidth)
            return (scaled(sourceWidth, factor), scaled(sourceHeight, factor))
        case (nil, let box?):
            let factor = min(1, Double(box) / sourceHeight)
            return (scaled(sourceWidth, factor), scaled(sourceHeight, factor))
        case (let boxWidth?, let boxHeight?):
            switch resize {
            case .fill:
                return (min(boxWidth, source.width), min(boxHeight, source.height))
            case .contain:
                let factor = min(1, Double(boxWidth) / sourceWidth, Double(boxHeight) / sourceHeight)
                return (scaled(sourceWidth, factor), scaled(sourceHeight, factor))
            case .cover:
                // Scaled to fill the box (never up), then cut to it.
                let factor = min(1, max(Double(boxWidth) / sourceWidth, Double(boxHeight) / sourceHeight))
                return (min(boxWidth, scaled(sourceWidth, factor)), min(boxHeight, scaled(sourceHeight, factor)))
            }
        }
    }
}

extension RenderPipeline {
    /// A JPEG the way `thumbnail` decodes one (libjpeg's DCT scaling, then Splash's Lanczos-3 to
    /// the exact size), cut to the box for `cover`: for a 1080 px photo → a 200 px tile, decoded
    /// at a quarter of its size, where libvips' thumbnail (8.14) decodes at half.
    fileprivate static func jpegSized(
        _ data: UnsafeMutableRawPointer?,
        count: Int,
        header: SourceHeader,
        _ transform: ImageTransform
    ) throws(VipsFailure) -> VImage {
        let upright = header.upright
        var scaled = transform.size(ofUpright: upright)
        var box: (width: Int, height: Int)?
        if transform.resize == .cover, let width = transform.width, let height = transform.height {
            // Scaled to fill the box (never up), then cut from the centre.
            let factor = min(1, max(Double(width) / Double(upright.width), Double(height) / Double(upright.height)))
            scaled = (max(1, Int((Double(upright.width) * factor).rounded())), max(1, Int((Double(upright.height) * factor).rounded())))
            box = (min(width, scaled.width), min(height, scaled.height))
        }
        var image = try jpegDecoded(data, count: count, header: header, atLeast: scaled).materialized()
        if (image.width, image.height) != scaled {
            image = try image.resampled(width: scaled.width, height: scaled.height)
        }
        if let box, (box.width, box.height) != scaled {
            let (left, top) = ((scaled.width - box.width) / 2, (scaled.height - box.height) / 2)
            image = try image.cropped(left: left, top: top, width: box.width, height: box.height)
        }
        return image
    }

    /// Any other format through libvips' thumbnail, shrinking on load where the format can.
    fileprivate static func vipsSized(
        _ data: UnsafeMutableRawPointer?,
        count: Int,
        header: SourceHeader,
        _ transform: ImageTransform
    ) throws(VipsFailure) -> VImage {
        // The box libvips fits the image in: a side left out is unbounded, so the other alone
        // decides (as libvips rounds it); fill's box is no larger than the image.
        let unbounded = 10_000_000
        let (width, height) =
            switch (transform.width, transform.height) {
            case (nil, nil): header.upright
            case (let width?, nil): (width, unbounded)
            case (nil, let height?): (unbounded, height)
            case (let width?, let height?):
                transform.resize == .fill ? transform.size(ofUpright: header.upright) : (width, height)
            }
        let crop = transform.resize == .cover && transform.width != nil && transform.height != nil
        let force = transform.resize == .fill && transform.width != nil && transform.height != nil
        return try VImage.make {
            splash_vips_thumbnail_box(data, count, $0, Int32(width), Int32(height), crop ? 1 : 0, force ? 1 : 0, header.hasICCProfile ? 1 : 0)
        }
        .materialized()
    }
}

/// What `RenderPipeline.transform` made.
package struct TransformedImage: Sendable, Equatable {
    package var bytes: [UInt8]
    package var format: ImageTransform.Format
    package var width: Int
    package var height: Int

    /// What its own header says: upright, sRGB without a profile.
    package var header: SourceHeader {
        SourceHeader(format: SourceFormat(rawValue: format.rawValue) ?? .jpeg, width: width, height: height, hasICCProfile: false)
    }
}

extension RenderPipeline {
    /// `source` sized and encoded as `transform` says: decoded with shrink-on-load, orientation
    /// applied, an ICC profile turned into sRGB, 8-bit sRGB with all metadata stripped (alpha kept
    /// for WebP and PNG, flattened on white for JPEG).
    /// - Throws: `ImagingError` when the source is not an image Splash reads, or over `limits`.
    package static func transform(
        _ source: [UInt8],
        _ transform: ImageTransform,
        limits: SourceLimits = SourceLimits()
    ) throws(ImagingError) -> TransformedImage {
        let header = try SourceInspection.inspect(source, limits: limits)
        let decoded = source.withUnsafeBytes { bytes in
            Result { () throws(VipsFailure) -> VImage in
                let data = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
                if header.format == .jpeg { return try jpegSized(data, count: bytes.count, header: header, transform) }
                return try vipsSized(data, count: bytes.count, header: header, transform)
            }
        }
        do {
            let image = try applyFilters(FilterChain.none, to: try decoded.get(), keepAlpha: transform.format != .jpeg)
            let bytes: [UInt8] =
                switch transform.format {
                case .jpeg: try image.jpegEncoded(quality: transform.quality)
                case .webp: try image.webpEncoded(quality: transform.quality)
                case .png: try image.encode { splash_vips_pngsave_buffer($0, $1, $2) }
                case .avif: try image.encode { splash_vips_avifsave_buffer($0, $1, $2, Int32(transform.avifQuality)) }
                }
            return TransformedImage(bytes: bytes, format: transform.format, width: image.width, height: image.height)
        } catch {
            throw .renderFailed(error.message)
        }
    }
}
