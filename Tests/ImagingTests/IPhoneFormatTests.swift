import Foundation
import TestSupport
import Testing

@testable import Imaging

/// HEIC/HEIF and AVIF, as an iPhone's library hands them over: recognised by their bytes, decoded
/// by libheif (the container's rotation applied, the EXIF orientation inside not applied again),
/// and rendered to JPEG or WebP without their metadata. The files are made here by pillow-heif.
@Suite("iPhone formats") struct IPhoneFormatTests {
    /// A 240×320 render of the test photo is as the phone showed it: red on top, blue below.
    static func expectUpright(_ image: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let pixels = try RenderPipeline.thumbnail(image, edge: 320).pixelBytes()
        let bands = pixels.count / (240 * 320)
        func pixel(x: Int, y: Int) -> [UInt8] { Array(pixels[(y * 240 + x) * bands..<(y * 240 + x) * bands + 3]) }
        let (top, bottom) = (pixel(x: 120, y: 40), pixel(x: 120, y: 280))
        #expect(top[0] > 150 && top[2] < 80, "\(top)", sourceLocation: sourceLocation)
        #expect(bottom[2] > 150 && bottom[0] < 80, "\(bottom)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [("heic", SourceFormat.heif), ("avif", SourceFormat.avif)])
    func aPhotoFromAnIPhoneIsReadByItsBytesAndRenderedUpright(_ format: String, _ expected: SourceFormat) throws {
        let bytes = try IPhonePhoto.made(format)
        // Upright once: the container's rotation is applied, the EXIF orientation not again.
        let header = try SourceInspection.inspect(bytes, limits: SourceLimits())
        #expect(header.format == expected && header.width == 480 && header.height == 640 && header.orientation == 1, "\(header)")

        let tile = try RenderPipeline.transform(bytes, ImageTransform(width: 240, height: 320, format: .jpeg))
        let read = try SourceInspection.inspect(tile.bytes, limits: SourceLimits())
        #expect(read.format == .jpeg && read.width == 240 && read.height == 320 && read.orientation == 1, "\(read)")
        try Self.expectUpright(tile.bytes)
        // No metadata goes out: no EXIF block, so no position.
        #expect(!tile.bytes.indices.dropLast(4).contains { Array(tile.bytes[$0..<$0 + 4]) == Array("Exif".utf8) })

        // The edit pipeline takes it too.
        let edited = try RenderPipeline.render(bytes, filters: .none, output: OutputRules(format: .webp, longestEdge: 400))
        #expect(edited.width == 300 && edited.height == 400)
    }

    /// `STORAGE_RENDER_AVIF`: a client that takes AVIF and asks no format gets AVIF; one that
    /// does not, or a service that does not render it, gets WebP or the stored format.
    @Test func aTransformIsAnAVIFForAClientThatTakesIt() throws {
        let asked = TransformRequest(width: 240, height: 320)
        let browser = "image/avif,image/webp,image/apng,*/*;q=0.8"
        #expect(asked.transform(stored: "image/heic", accept: browser, avif: true).format == .avif)
        #expect(asked.transform(stored: "image/heic", accept: browser, avif: false).format == .webp)
        #expect(asked.transform(stored: "image/heic", accept: "image/avif", avif: false).format == .jpeg)
        #expect(TransformRequest(width: 240, format: "origin").transform(stored: "image/png", accept: browser, avif: true).format == .png)

        let photo = try IPhonePhoto.made("heic")
        let tile = try RenderPipeline.transform(photo, asked.transform(stored: "image/heic", accept: browser, avif: true))
        let read = try SourceInspection.inspect(tile.bytes, limits: SourceLimits())
        #expect(tile.format == .avif && read.format == .avif && read.width == 240 && read.height == 320 && read.orientation == 1, "\(read)")
        #expect(!tile.bytes.indices.dropLast(4).contains { Array(tile.bytes[$0..<$0 + 4]) == Array("Exif".utf8) })
        try Self.expectUpright(tile.bytes)
    }

    @Test func anISOMediaFileThatIsNotAPhotoIsRefusedByName() throws {
        // A video's header: ftyp with an MP4 brand.
        let video: [UInt8] = [0, 0, 0, 0x18] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8) + [UInt8](repeating: 0, count: 64)
        #expect(throws: ImagingError.unsupportedFormat(detected: "a video or another ISO media file")) {
            try SourceInspection.inspect(video, limits: SourceLimits())
        }
        // A "HEIC" whose boxes are nonsense: unreadable, not a crash.
        let fake: [UInt8] = [0, 0, 0, 0x18] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8) + [UInt8](repeating: 0x41, count: 4096)
        #expect(throws: ImagingError.self) { try RenderPipeline.transform(fake, ImageTransform(width: 100, format: .jpeg)) }
        // A real HEIC cut in half.
        let heic = try IPhonePhoto.made("heic")
        #expect(throws: ImagingError.self) {
            try RenderPipeline.transform(Array(heic.prefix(heic.count / 2)), ImageTransform(width: 100, format: .jpeg))
        }
    }
}
