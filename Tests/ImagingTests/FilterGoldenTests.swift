import CVips
import Contracts
import Foundation
import Testing

@testable import Imaging

/// Each filter on a real photo against the image it produced when its definition was checked
/// (`Fixtures/golden/<filter>.png`). To record them again after a deliberate change, run the suite
/// with `SPLASH_RECORD_GOLDENS=<directory>` and copy the files in; review them first.
@Suite("Filter golden images") struct FilterGoldenTests {
    static let photo = "FreshFlower"
    static let edge = 128

    /// One step per filter, with parameters away from their defaults where it has any.
    static let cases: [FilterStep] = [
        FilterStep(name: "sepia", parameters: ["intensity": 0.8]),
        FilterStep(name: "noir"), FilterStep(name: "mono"), FilterStep(name: "tonal"),
        FilterStep(name: "chrome"), FilterStep(name: "fade"), FilterStep(name: "instant"),
        FilterStep(name: "process"), FilterStep(name: "transfer"),
        FilterStep(name: "colorControls", parameters: ["brightness": 0.1, "contrast": 1.2, "saturation": 1.3]),
        FilterStep(name: "exposure", parameters: ["ev": 0.7]),
        FilterStep(name: "vibrance", parameters: ["amount": 0.6]),
        FilterStep(name: "hue", parameters: ["angle": 1.2]),
        FilterStep(name: "temperature", parameters: ["temperature": 4000, "tint": 20]),
        FilterStep(name: "vignette", parameters: ["intensity": 0.8, "radius": 1]),
        FilterStep(name: "gaussianBlur", parameters: ["radius": 6]),
        FilterStep(name: "sharpen", parameters: ["sharpness": 1, "radius": 3]),
        FilterStep(name: "invert"),
    ]

    @Test func everyFilterOfTheCatalogHasAGoldenCase() {
        #expect(Set(Self.cases.map(\.name)) == Set(FilterCatalog.all.map(\.name)))
    }

    @Test(arguments: cases)
    func matchesItsGoldenImage(_ step: FilterStep) throws {
        let image = try filtered(Self.photo, edge: Self.edge, [step])
        if let directory = ProcessInfo.processInfo.environment["SPLASH_RECORD_GOLDENS"] {
            let png = try VImage.fromPixels(image.data, width: image.width, height: image.height, bands: image.bands)
                .encode { splash_vips_pngsave_buffer($0, $1, $2) }
            try Data(png).write(to: URL(fileURLWithPath: directory).appendingPathComponent("\(step.name).png"))
            return
        }
        let url = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/golden/\(step.name).png")
        let golden = try decode(Array(Data(contentsOf: url)))
        #expect((golden.width, golden.height, golden.bands) == (image.width, image.height, image.bands))
        let difference = image.difference(from: golden)
        // Room for libvips' resampler to differ by a level between releases, no more.
        #expect(difference.mean <= 0.5 && difference.max <= 4, "\(step.name): mean \(difference.mean), max \(difference.max)")
    }
}
