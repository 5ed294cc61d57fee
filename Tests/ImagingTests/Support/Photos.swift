import CVips
import Contracts
import Foundation
import TestSupport

@testable import Imaging

/// The real photographs of `Fixtures/photos` (Debian's `mate-backgrounds`; see SOURCE.md there).
enum Photos {
    static let directory = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/photos")

    static let names = [
        "Aqua", "Blinds", "Dune", "FreshFlower", "Garden", "GreenMeadow", "LadyBird", "RainDrops", "Storm", "TwoWings", "Wood", "YellowFlower",
    ]

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent("\(name).jpg")))
    }

    static let elephants = LargePainting.url
}

/// 8-bit pixels, row by row, bands interleaved.
struct Pixels: Equatable {
    var width: Int
    var height: Int
    var bands: Int
    var data: [UInt8]

    var count: Int { width * height }

    func pixel(_ index: Int) -> [Int] {
        (0..<bands).map { Int(data[index * bands + $0]) }
    }

    func pixel(x: Int, y: Int) -> [Int] { pixel(y * width + x) }

    /// Mean of each band over the whole image.
    var means: [Double] {
        var sums = [Double](repeating: 0, count: bands)
        for index in 0..<data.count { sums[index % bands] += Double(data[index]) }
        return sums.map { $0 / Double(count) }
    }

    /// Mean over pixels of max(R,G,B) − min(R,G,B): how colourful the image is.
    var meanChroma: Double {
        var total = 0
        for index in 0..<count {
            let p = pixel(index)
            total += p.max()! - p.min()!
        }
        return Double(total) / Double(count)
    }

    /// Largest and mean absolute difference, value by value.
    func difference(from other: Pixels) -> (max: Int, mean: Double) {
        precondition(data.count == other.data.count)
        var (largest, total) = (0, 0)
        for index in 0..<data.count {
            let d = abs(Int(data[index]) - Int(other.data[index]))
            largest = max(largest, d)
            total += d
        }
        return (largest, Double(total) / Double(data.count))
    }

    /// Mean squared difference between neighbours across the image: high-frequency energy.
    var detail: Double {
        var total = 0.0
        for y in 0..<height {
            for x in 1..<width {
                for band in 0..<bands {
                    let d = Double(data[(y * width + x) * bands + band]) - Double(data[(y * width + x - 1) * bands + band])
                    total += d * d
                }
            }
        }
        return total / Double(height * (width - 1) * bands)
    }
}

/// Runs the pipeline up to (not including) encoding, so filters are judged on exact pixels.
func filtered(_ photo: String, edge: Int = 192, _ steps: [FilterStep]) throws -> Pixels {
    let chain = try FilterChain(steps)
    let decoded = try RenderPipeline.thumbnail(try Photos.bytes(photo), edge: edge)
    return try pixels(of: RenderPipeline.applyFilters(chain, to: decoded, keepAlpha: false))
}

func pixels(of image: VImage) throws -> Pixels {
    let memory = try image.materialized()
    return Pixels(width: memory.width, height: memory.height, bands: memory.bands, data: try memory.pixelBytes())
}

/// Decodes an encoded file fully (for checking outputs).
func decode(_ bytes: [UInt8]) throws -> Pixels {
    try pixels(of: RenderPipeline.thumbnail(bytes, edge: 10_000))
}

/// What an encoded file carries besides pixels.
struct FileFacts {
    var width: Int
    var height: Int
    var interpretation: VipsInterpretation
    var hasEXIF: Bool
    var hasICCProfile: Bool
    var loader: String
}

func facts(_ bytes: [UInt8]) throws -> FileFacts {
    guard let header = bytes.withUnsafeBytes({ splash_vips_header_from_buffer($0.baseAddress, $0.count) }) else { throw VipsFailure.take() }
    let image = VImage(owning: header)
    let loader = bytes.withUnsafeBytes { vips_foreign_find_load_buffer($0.baseAddress, $0.count) }.map { String(cString: $0) } ?? "none"
    return FileFacts(
        width: image.width,
        height: image.height,
        interpretation: image.interpretation,
        hasEXIF: vips_image_get_typeof(image.pointer, "exif-data") != 0,
        hasICCProfile: image.hasICCProfile,
        loader: loader
    )
}

/// Where two images' bytes first differ (`nil`: they are the same), which a failure names instead
/// of listing millions of values.
func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String? {
    guard a.count == b.count else { return "\(a.count) bytes against \(b.count)" }
    return a.indices.first { a[$0] != b[$0] }.map { "byte \($0): \(a[$0]) against \(b[$0])" }
}
