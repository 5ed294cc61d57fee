import CVips
import Contracts
import Foundation
import Testing

@testable import Imaging

/// Services/EditRender/README.md, "Output": size, colour, metadata and the byte budget.
@Suite("Render output") struct RenderOutputTests {
    static let sepiaVignette = try! FilterChain([FilterStep(name: "sepia"), FilterStep(name: "vignette", parameters: ["intensity": 0.6])])

    @Test(arguments: Photos.names)
    func everyFixturePhotoRendersWithin1080PixelsAsAnSRGBJPEGWithoutMetadataUnder2MB(_ name: String) throws {
        let source = try Photos.bytes(name)
        let rendered = try RenderPipeline.render(source, filters: Self.sepiaVignette, output: OutputRules())
        let file = try facts(rendered.bytes)
        #expect(file.loader == "VipsForeignLoadJpegBuffer")
        #expect(max(file.width, file.height) == 1080)
        #expect((file.width, file.height) == (rendered.width, rendered.height))
        #expect(file.interpretation == VIPS_INTERPRETATION_sRGB)
        #expect(!file.hasEXIF && !file.hasICCProfile)
        #expect(rendered.bytes.count <= 1 << 20)
        #expect((40...92).contains(rendered.quality))
    }

    @Test func theLargeUnsplashSizedPaintingFitsTheBudget() throws {
        let source = Array(try Data(contentsOf: Photos.elephants))
        #expect(source.count > 15_000_000)
        let rendered = try RenderPipeline.render(source, filters: try FilterChain([]), output: OutputRules())
        #expect((rendered.width, rendered.height) == (1080, 607))
        #expect(rendered.bytes.count <= 2 << 20)
        // At 2048 px this detailed painting no longer fits 1 MB at the top quality: the bisection
        // finds the highest quality that does.
        let large = try RenderPipeline.render(source, filters: try FilterChain([]), output: OutputRules(longestEdge: 2048))
        #expect(large.bytes.count <= 1 << 20)
        #expect(large.quality < 92 && large.encodes <= 8)
        // One quality step higher, the same pixels (not the decoded output, which compresses better) are over.
        let pixels = try RenderPipeline.applyFilters(try FilterChain([]), to: RenderPipeline.thumbnail(source, edge: 2048), keepAlpha: false)
        let oneHigher = try ByteBudgetEncoder.save(pixels.materialized(), format: .jpeg, quality: large.quality + 1)
        #expect(oneHigher.count > 1 << 20 || large.quality == 92)
    }

    @Test func anImageNeverGrowsAndSmallPhotosKeepTheirSize() throws {
        let rendered = try RenderPipeline.render(
            try Photos.bytes("GreenMeadow"),
            filters: try FilterChain([]),
            output: OutputRules(longestEdge: 2048)
        )
        #expect((rendered.width, rendered.height) == (1280, 1024))
    }

    @Test func aBudgetNothingFitsShrinksTheImageInTenPercentSteps() throws {
        let rules = OutputRules(longestEdge: 1080, targetBytes: 8_000, capBytes: 12_000)
        let rendered = try RenderPipeline.render(try Photos.bytes("RainDrops"), filters: try FilterChain([]), output: rules)
        #expect(rendered.bytes.count <= 12_000)
        #expect(rendered.width < 1080)
        #expect(rendered.quality == 40 || rendered.bytes.count <= 8_000)
    }

    @Test func webpOnRequest() throws {
        let rendered = try RenderPipeline.render(try Photos.bytes("Aqua"), filters: Self.sepiaVignette, output: OutputRules(format: .webp))
        #expect(try facts(rendered.bytes).loader == "VipsForeignLoadWebpBuffer")
        #expect(rendered.mediaType == "image/webp")
    }

    @Test func theExifOrientationIsAppliedBeforeMetadataIsStripped() throws {
        // A landscape photo tagged "rotate 90° clockwise" comes out portrait.
        let source = try Photos.bytes("Storm")
        let rotated = try withEXIFOrientation(6, source)
        let rendered = try RenderPipeline.render(rotated, filters: try FilterChain([]), output: OutputRules())
        #expect((rendered.width, rendered.height) == (720, 1080))
        #expect(!(try facts(rendered.bytes).hasEXIF))
    }

    @Test func aPreviewIsAtMost400Pixels() throws {
        let preview = try RenderPipeline.render(try Photos.bytes("TwoWings"), filters: Self.sepiaVignette, output: .preview())
        #expect(max(preview.width, preview.height) == 400)
        #expect(preview.encodes == 1)
    }

    /// The photo re-saved by libvips with an EXIF orientation tag.
    private func withEXIFOrientation(_ orientation: Int32, _ source: [UInt8]) throws -> [UInt8] {
        let image = try RenderPipeline.thumbnail(source, edge: 1920)
        let tagged = try image.map { splash_vips_copy_with_orientation($0, $1, orientation) }
        return try tagged.encode { splash_vips_jpegsave_buffer_keeping_metadata($0, $1, $2, 90) }
    }
}
