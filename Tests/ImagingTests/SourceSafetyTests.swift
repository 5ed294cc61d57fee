import CVips
import Contracts
import Foundation
import Testing

@testable import Imaging

/// The source checks of Services/EditRender/README.md ("Pipeline"): what a hostile or broken
/// source gets.
@Suite("Source safety") struct SourceSafetyTests {
    let chain = try! FilterChain([FilterStep(name: "sepia")])

    func render(_ bytes: [UInt8]) throws(ImagingError) -> RenderedImage {
        try RenderPipeline.render(bytes, filters: chain, output: OutputRules())
    }

    @Test func aTruncatedJPEGIsUnreadableNotACrash() throws {
        let photo = try Photos.bytes("Storm")
        #expect {
            try render(Array(photo.prefix(photo.count / 2)))
        } throws: { error in
            guard case .unreadable = error as? ImagingError else { return false }
            return "\(error)".contains("damaged or incomplete")
        }
    }

    @Test func filesThatAreNotImagesOrNotAllowedFormatsAreNamed() {
        let cases: [(bytes: [UInt8], detected: String)] = [
            (Array("GIF89a\u{1}\u{0}\u{1}\u{0}".utf8), "a GIF"),
            (Array(#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>"#.utf8), "an SVG or XML document"),
            (Array(#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.utf8), "an SVG or XML document"),
            ([0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00], "a TIFF"),
            (Array("just some text, not a picture".utf8), "not an image Splash recognises"),
            ([], "empty"),
        ]
        for (bytes, detected) in cases {
            #expect(throws: ImagingError.unsupportedFormat(detected: detected)) { try render(bytes) }
        }
    }

    @Test func aSixtyMegapixelHeaderOnASmallFileIsRefusedBeforeDecoding() throws {
        let bomb = try jpeg(declaring: (width: 10_000, height: 6_000))
        #expect(bomb.count < 10_000)
        #expect(throws: ImagingError.tooManyPixels(width: 10_000, height: 6_000, limit: 50_000_000)) { try render(bomb) }
        // The same file within the limit reads its header fine and fails on its missing pixels.
        let honest = try jpeg(declaring: (width: 5_000, height: 5_000))
        #expect(throws: ImagingError.self) { try render(honest) }
    }

    @Test func aFileOverTheSizeLimitIsRefusedUnread() {
        let huge = [0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0, count: 25 << 20)
        #expect(throws: ImagingError.fileTooLarge(bytes: huge.count, limit: 25 << 20)) { try render(huge) }
    }

    @Test func pngAndWebPSourcesRender() throws {
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("YellowFlower"), edge: 600)
        let png = try photo.encode { splash_vips_pngsave_buffer($0, $1, $2) }
        let webp = try photo.encode { splash_vips_webpsave_buffer($0, $1, $2, 80) }
        #expect(try render(png).width == 600)
        #expect(try render(webp).width == 600)
    }

    @Test func unknownFiltersParametersAndOutOfRangeValuesNameTheirField() {
        func field(_ steps: [FilterStep]) -> String? {
            do {
                _ = try FilterChain(steps)
                return nil
            } catch { return error.field }
        }
        #expect(field([FilterStep(name: "sepia"), FilterStep(name: "sparkle")]) == "filters[1].name")
        #expect(field([FilterStep(name: "sepia", parameters: ["intensity": 1.5])]) == "filters[0].intensity")
        #expect(field([FilterStep(name: "hue", parameters: ["angle": -4])]) == "filters[0].angle")
        #expect(field([FilterStep(name: "vignette", parameters: ["strength": 1])]) == "filters[0].strength")
        #expect(field([FilterStep(name: "invert", parameters: ["amount": 1])]) == "filters[0].amount")
        #expect(field(Array(repeating: FilterStep(name: "invert"), count: 33)) == "filters")
        #expect(field([FilterStep(name: "temperature", parameters: ["temperature": 2000, "tint": 150])]) == nil)
    }

    @Test func consecutiveColourFiltersMergeIntoOneStage() throws {
        let chain = try FilterChain([
            FilterStep(name: "sepia"), FilterStep(name: "hue", parameters: ["angle": 1]),
            FilterStep(name: "colorControls", parameters: ["contrast": 1.2]), FilterStep(name: "vignette", parameters: ["intensity": 0.5]),
            FilterStep(name: "invert"),
        ])
        #expect(chain.stages.count == 3)
        #expect(try FilterChain([FilterStep(name: "colorControls"), FilterStep(name: "hue")]).stages.isEmpty)
    }

    /// A real baseline JPEG whose frame header (SOF0) is rewritten to declare another size.
    private func jpeg(declaring size: (width: Int, height: Int)) throws -> [UInt8] {
        let small = try RenderPipeline.thumbnail(try Photos.bytes("FreshFlower"), edge: 32)
        var bytes = try small.encode { splash_vips_jpegsave_buffer($0, $1, $2, 80) }
        let sof = try #require((0..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 })
        // FF C0, length (2), precision (1), height (2), width (2).
        bytes[sof + 5] = UInt8(size.height >> 8)
        bytes[sof + 6] = UInt8(size.height & 0xFF)
        bytes[sof + 7] = UInt8(size.width >> 8)
        bytes[sof + 8] = UInt8(size.width & 0xFF)
        return bytes
    }
}
