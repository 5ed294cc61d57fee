import CVips
import Foundation

/// The formats a source may be in.
package enum SourceFormat: String, Sendable, Equatable {
    case jpeg, png, webp
    /// HEIC/HEIF, as iPhones save photos; decoded by libheif, its own orientation applied.
    case heif
    case avif

    /// Its media type, as stored objects and uploads are served.
    package var mediaType: String { "image/\(rawValue)" }
}

/// What a source's first bytes and header say, read before any pixel is decoded.
package struct SourceHeader: Sendable, Equatable {
    package var format: SourceFormat
    package var width: Int
    package var height: Int
    /// The file embeds an ICC profile (its pixels are converted to sRGB when decoded).
    package var hasICCProfile: Bool
    /// The EXIF orientation (1–8; 1 when none), applied when decoded.
    package var orientation: Int = 1

    /// The size as the photo is seen, its orientation applied (5–8 turn it a quarter).
    package var upright: (width: Int, height: Int) { orientation >= 5 ? (height, width) : (width, height) }
}

/// The limits a source is checked against (Services/EditRender/README.md, "Pipeline").
package struct SourceLimits: Sendable, Equatable {
    package var maxBytes: Int
    package var maxPixels: Int

    package init(maxBytes: Int = 25 << 20, maxPixels: Int = 50_000_000) {
        self.maxBytes = maxBytes
        self.maxPixels = maxPixels
    }
}

package enum SourceInspection {
    /// The format the bytes' signature names, or what they look like when it is not one Splash
    /// renders (a GIF, an SVG, a TIFF, …).
    package static func sniff(_ bytes: some Collection<UInt8>) throws(ImagingError) -> SourceFormat {
        let head = Array(bytes.prefix(16))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count && Array(head[offset..<offset + signature.count]) == signature
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        // An ISO media file: what its brand names decides; a video or any other is refused.
        if starts(Array("ftyp".utf8), at: 4) {
            let brand = String(decoding: head[8..<12], as: UTF8.self)
            if ["avif", "avis"].contains(brand) { return .avif }
            if ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"].contains(brand) { return .heif }
        }
        throw .unsupportedFormat(detected: describe(head, bytes))
    }

    private static func describe(_ head: [UInt8], _ bytes: some Collection<UInt8>) -> String {
        func starts(_ text: String) -> Bool { head.starts(with: Array(text.utf8)) }
        if bytes.isEmpty { return "empty" }
        if starts("GIF87a") || starts("GIF89a") { return "a GIF" }
        if starts("II*\u{0}") || starts("MM\u{0}*") { return "a TIFF" }
        if starts("BM") { return "a BMP" }
        if starts("%PDF") { return "a PDF" }
        if head.count >= 12 && Array(head[4..<8]) == Array("ftyp".utf8) { return "a video or another ISO media file" }
        let text = String(decoding: bytes.prefix(512), as: UTF8.self).lowercased()
        if text.contains("<svg") || text.hasPrefix("<?xml") { return "an SVG or XML document" }
        return "not an image Splash recognises"
    }

    /// Checks the bytes against `limits` and reads the header: format, then size, then declared
    /// pixels — all before decoding, so a decompression bomb costs nothing.
    package static func inspect(_ bytes: [UInt8], limits: SourceLimits) throws(ImagingError) -> SourceHeader {
        let format = try sniff(bytes)
        guard bytes.count <= limits.maxBytes else { throw .fileTooLarge(bytes: bytes.count, limit: limits.maxBytes) }
        try VipsRuntime.start()
        let header = bytes.withUnsafeBytes { splash_vips_header_from_buffer($0.baseAddress, $0.count) }
        return try checked(header, format: format, limits: limits)
    }

    /// The same checks on a file (an upload the blob store holds): its first bytes, its size,
    /// then its header, read without decoding.
    package static func inspect(fileAt path: String, limits: SourceLimits) throws(ImagingError) -> SourceHeader {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .unreadable("the file is missing") }
        let head = (try? handle.read(upToCount: 512)) ?? nil
        let size = (try? handle.seekToEnd()).map(Int.init) ?? 0
        try? handle.close()
        let format = try sniff(Array(head ?? Data()))
        guard size <= limits.maxBytes else { throw .fileTooLarge(bytes: size, limit: limits.maxBytes) }
        try VipsRuntime.start()
        return try checked(splash_vips_header_from_file(path), format: format, limits: limits)
    }

    private static func checked(
        _ header: UnsafeMutablePointer<VipsImage>?,
        format: SourceFormat,
        limits: SourceLimits
    ) throws(ImagingError) -> SourceHeader {
        guard let header else { throw .unreadable(VipsFailure.take().message) }
        let image = VImage(owning: header)
        guard image.width > 0, image.height > 0 else { throw .unreadable("no pixels") }
        guard image.width * image.height <= limits.maxPixels else {
            throw .tooManyPixels(width: image.width, height: image.height, limit: limits.maxPixels)
        }
        return SourceHeader(
            format: format,
            width: image.width,
            height: image.height,
            hasICCProfile: image.hasICCProfile,
            orientation: Int(splash_vips_orientation(image.pointer))
        )
    }
}
