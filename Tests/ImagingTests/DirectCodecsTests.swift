import CVips
import Foundation
import Testing

@testable import Imaging

/// libjpeg-turbo and libwebp called directly (`DirectCodecs`) must give exactly what libvips'
/// loader and savers give with the same settings: the same pixels from a JPEG at every DCT scale,
/// the same bytes for a JPEG or a WebP, the same refusal of a damaged file.
@Suite("Direct codecs") struct DirectCodecsTests {
    /// libvips' own decode at 1/`shrink`, as 8-bit RGB.
    static func libvipsDecode(_ bytes: [UInt8], shrink: Int) throws -> Pixels {
        let image = try bytes.withUnsafeBytes { data throws(VipsFailure) in
            try VImage.make { splash_vips_jpegload_shrunk(UnsafeMutableRawPointer(mutating: data.baseAddress), data.count, $0, Int32(shrink)) }
        }
        let colour = image.bands == 3 ? image : try image.map { splash_vips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        return try pixels(of: colour)
    }

    static func directDecode(_ bytes: [UInt8], shrink: Int) throws -> Pixels? {
        let image = try bytes.withUnsafeBytes { data throws(VipsFailure) in try DirectCodecs.decodeJPEG(data, shrink: shrink) }
        return try image.map { try pixels(of: $0) }
    }

    @Test(arguments: Photos.names)
    func aJPEGDecodesToLibvipsPixelsAtEveryScale(_ name: String) throws {
        let bytes = try Photos.bytes(name)
        for shrink in [1, 2, 4, 8] {
            let direct = try #require(try Self.directDecode(bytes, shrink: shrink))
            let libvips = try Self.libvipsDecode(bytes, shrink: shrink)
            #expect((direct.width, direct.height) == (libvips.width, libvips.height), "1/\(shrink)")
            #expect(firstDifference(direct.data, libvips.data) == nil, "1/\(shrink)")
        }
    }

    @Test func aGreyJPEGDecodesAsRGB() throws {
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("Storm"), edge: 700)
        let grey = try photo.map { splash_vips_colourspace($0, $1, VIPS_INTERPRETATION_B_W) }
        let bytes = try grey.encode { splash_vips_jpegsave_buffer($0, $1, $2, 85) }
        let direct = try #require(try Self.directDecode(bytes, shrink: 2))
        #expect(direct.bands == 3)
        #expect(firstDifference(direct.data, try Self.libvipsDecode(bytes, shrink: 2).data) == nil)
    }

    @Test func aCMYKJPEGIsLeftToLibvips() throws {
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("LadyBird"), edge: 400)
        let cmyk = try photo.map { splash_vips_colourspace($0, $1, VIPS_INTERPRETATION_CMYK) }
        let bytes = try cmyk.encode { splash_vips_jpegsave_buffer_keeping_metadata($0, $1, $2, 90) }
        #expect(try Self.directDecode(bytes, shrink: 1) == nil)
        // The pipeline still renders it, through libvips' conversion.
        let rendered = try RenderPipeline.render(bytes, filters: .none, output: OutputRules(longestEdge: 300))
        #expect(rendered.width == 300)
    }

    @Test func aDamagedJPEGIsRefusedLikeLibvipsRefusesIt() throws {
        let photo = try Photos.bytes("Garden")
        let truncated = Array(photo.prefix(photo.count * 2 / 3))
        var corrupt = photo
        // Noise over part of the entropy-coded data, past the headers.
        for index in stride(from: photo.count / 2, to: photo.count / 2 + 4_000, by: 7) { corrupt[index] = 0xFF }
        for damaged in [truncated, corrupt] {
            #expect(throws: VipsFailure.self) { try Self.libvipsDecode(damaged, shrink: 4) }
            #expect {
                try Self.directDecode(damaged, shrink: 4)
            } throws: { error in
                !"\(error)".isEmpty
            }
        }
        #expect {
            try RenderPipeline.render(truncated, filters: .none, output: OutputRules())
        } throws: { error in
            guard case .unreadable(let detail) = error as? ImagingError else { return false }
            return detail.contains("Premature end")
        }
    }

    /// Damage of every kind a file meets — a byte changed, bytes cut out or put in, the end cut
    /// off — in a small baseline and a small progressive JPEG: wherever libvips refuses the file,
    /// so does the direct decode, and wherever both decode it, the pixels are libvips' own. The
    /// direct decode may refuse more: libvips (8.14) looks at libjpeg's warnings before each strip
    /// it reads, not after the last, so damage in a photo's last rows renders there as grey.
    @Test func aDamagedFileGetsLibvipsAnswer() throws {
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("LadyBird"), edge: 96)
        let files = [
            try photo.encode { splash_vips_jpegsave_buffer($0, $1, $2, 75) },
            try photo.encode { splash_vips_jpegsave_progressive_buffer($0, $1, $2, 75) },
        ]
        var state: UInt64 = 0x5eed
        func random(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % bound
        }
        var (refused, decoded, refusedMore) = (0, 0, 0)
        for file in files {
            for trial in 0..<150 {
                var damaged = file
                let at = random(damaged.count)
                switch trial % 4 {
                case 0: damaged[at] = UInt8(random(256))
                case 1: damaged.removeSubrange(at..<min(damaged.count, at + 1 + random(16)))
                case 2: damaged.insert(contentsOf: (0..<1 + random(8)).map { _ in UInt8(random(256)) }, at: at)
                default: damaged.removeSubrange(max(2, at)...)
                }
                for shrink in [1, 4] {
                    let libvips = try? Self.libvipsDecode(damaged, shrink: shrink)
                    let direct = Result { try Self.directDecode(damaged, shrink: shrink) }
                    switch (libvips, direct) {
                    case (nil, .failure): refused += 1
                    case (let expected?, .success(let pixels?)):
                        decoded += 1
                        #expect(firstDifference(pixels.data, expected.data) == nil, "trial \(trial) at 1/\(shrink)")
                    case (_?, .failure(let error)):
                        // libjpeg's own word that the data is damaged, never a refusal of a sound file.
                        refusedMore += 1
                        #expect("\(error)".hasPrefix("Corrupt JPEG data"), "trial \(trial) at 1/\(shrink): \(error)")
                    default:
                        Issue.record("trial \(trial) at 1/\(shrink): libvips \(libvips == nil ? "refused" : "decoded"), direct \(direct)")
                    }
                }
            }
        }
        // Both kinds of answer were tried, and the stricter one stays rare.
        #expect(
            refused > 50 && decoded > 50 && refusedMore < 20,
            "\(refused) refused, \(decoded) decoded, \(refusedMore) refused by the direct decode alone"
        )
    }

    /// A photo at 1080 px and a 200 px tile, as the renders and the thumbnails encode them.
    static func samples() throws -> [VImage] {
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("GreenMeadow"), edge: 1080)
        return [photo, try photo.resampled(width: 200, height: 133)]
    }

    @Test func aJPEGIsLibvipsBytes() throws {
        for image in try Self.samples() {
            for quality in [40, 80, 95] {
                let direct = try #require(try DirectCodecs.jpeg(image, quality: quality))
                let libvips = try image.encode { splash_vips_jpegsave_buffer($0, $1, $2, Int32(quality)) }
                #expect(firstDifference(direct, libvips) == nil, "\(image.width) px at quality \(quality)")
            }
        }
    }

    /// A WebP file's chunks (RIFF: a four-letter name, a little-endian length, the data padded to
    /// an even length), but the extended header (VP8X), which only says which others follow.
    static func chunks(_ webp: [UInt8]) -> [String: [UInt8]] {
        var (chunks, offset) = ([String: [UInt8]](), 12)
        while offset + 8 <= webp.count {
            let name = String(decoding: webp[offset..<offset + 4], as: UTF8.self)
            let length = (0..<4).reduce(0) { $0 | Int(webp[offset + 4 + $1]) << (8 * $1) }
            if name != "VP8X" { chunks[name] = Array(webp[offset + 8..<min(webp.count, offset + 8 + length)]) }
            offset += 8 + length + length % 2
        }
        return chunks
    }

    @Test func aWebPIsLibvipsImageDataWithAndWithoutAlpha() throws {
        for image in try Self.samples() {
            let opaque = try #require(try DirectCodecs.webp(image, quality: 80))
            let libvipsOpaque = try image.encode { splash_vips_webpsave_buffer($0, $1, $2, 80) }
            // The simple format: the image data is the whole file but its 20-byte RIFF header.
            #expect(Array(opaque[12..<16]) == Array("VP8 ".utf8))
            #expect(Array(Self.chunks(opaque).keys) == ["VP8 "])
            #expect(firstDifference(Self.chunks(opaque)["VP8 "] ?? [], Self.chunks(libvipsOpaque)["VP8 "] ?? []) == nil, "\(image.width) px")
            // A gradient alpha band, as a PNG with transparency brings.
            let alpha = try VImage.filled(
                width: image.width,
                height: image.height,
                bands: 1,
                format: VIPS_FORMAT_UCHAR,
                interpretation: VIPS_INTERPRETATION_B_W
            ) {
                pixels in
                for index in 0..<image.width * image.height {
                    pixels.storeBytes(of: UInt8(index % image.width * 255 / image.width), toByteOffset: index, as: UInt8.self)
                }
                return true
            }
            let withAlpha = try VImage.make { splash_vips_bandjoin2(image.pointer, alpha.pointer, $0) }.materialized()
            let translucent = Self.chunks(try #require(try DirectCodecs.webp(withAlpha, quality: 80)))
            let libvipsTranslucent = Self.chunks(try withAlpha.encode { splash_vips_webpsave_buffer($0, $1, $2, 80) })
            // No EXIF chunk either: libvips 8.14 writes one even when stripping (its resolution and
            // orientation tags), with the same image data.
            #expect(Set(translucent.keys) == ["ALPH", "VP8 "])
            for name in translucent.keys {
                #expect(firstDifference(translucent[name]!, libvipsTranslucent[name] ?? []) == nil, "\(image.width) px, \(name)")
            }
        }
    }

    @Test func aCropCopiesTheAreaLibvipsExtracts() throws {
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("Dune"), edge: 300)
        let copied = try photo.cropped(left: 37, top: 11, width: 150, height: 120)
        let extracted = try photo.map { splash_vips_extract_area($0, $1, 37, 11, 150, 120) }
        #expect(firstDifference(try pixels(of: copied).data, try pixels(of: extracted).data) == nil)
        #expect(throws: VipsFailure.self) { try photo.cropped(left: 200, top: 0, width: 150, height: 10) }
    }
}
