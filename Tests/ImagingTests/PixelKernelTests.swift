import CVips
import Foundation
import PixelKernels
import Testing

@testable import Imaging

/// Splash's own pixel loops (`PixelKernels`): the fixed-point Lanczos-3 resampler and the fused
/// point filters, held to their scalar code, to libvips and to the formulas of Services/EditRender/README.md.
/// The kernels' SIMD level is global to the process, so the suite's tests take turns (other suites
/// get the same pixels at any level).
@Suite("Pixel kernels", .serialized) struct PixelKernelTests {
    /// A deterministic noise image: every value different from its neighbours, the worst case for
    /// a resampler's rounding.
    static func noise(width: Int, height: Int, bands: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<width * height * bands).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }

    static func resize(_ pixels: [UInt8], _ width: Int, _ height: Int, bands: Int, to targetWidth: Int, _ targetHeight: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: targetWidth * targetHeight * bands)
        let status = pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                splash_resize_lanczos3(
                    source.baseAddress,
                    Int32(width),
                    Int32(height),
                    Int32(bands),
                    target.baseAddress,
                    Int32(targetWidth),
                    Int32(targetHeight)
                )
            }
        }
        #expect(status == 0)
        return out
    }

    /// Shrinking, enlarging, a single row or column, every band count, widths that leave SIMD tails.
    static let sizes: [(width: Int, height: Int, bands: Int, targetWidth: Int, targetHeight: Int)] = [
        (517, 333, 3, 211, 150), (640, 400, 4, 333, 208), (301, 97, 1, 128, 41),
        (1280, 800, 3, 1080, 675), (50, 40, 3, 73, 61), (9, 1, 3, 4, 1), (1, 30, 2, 1, 7), (7, 5, 3, 7, 5),
    ]

    /// `body`'s result at each SIMD level, the scalar code's first (on a CPU without AVX2 the
    /// higher levels run what it has).
    static func atEveryLevel<Result>(_ body: () -> Result) -> [Result] {
        defer { splash_kernels_limit(SPLASH_KERNELS_AVX2) }
        return [SPLASH_KERNELS_SCALAR, SPLASH_KERNELS_SSE, SPLASH_KERNELS_AVX2].map { level in
            splash_kernels_limit(level)
            return body()
        }
    }

    @Test(arguments: 0..<sizes.count)
    func theSIMDPathsGiveTheScalarCodesPixels(_ index: Int) {
        let size = Self.sizes[index]
        let source = Self.noise(width: size.width, height: size.height, bands: size.bands, seed: UInt64(index + 1))
        let results = Self.atEveryLevel {
            Self.resize(source, size.width, size.height, bands: size.bands, to: size.targetWidth, size.targetHeight)
        }
        #expect(firstDifference(results[1], results[0]) == nil, "SSE against scalar")
        #expect(firstDifference(results[2], results[0]) == nil, "AVX2 against scalar")
    }

    @Test func aFlatColourStaysExactlyThatColour() {
        let colour: [UInt8] = [200, 17, 3]
        let flat = Array((0..<(731 * 419)).map { _ in colour }.joined())
        let out = Self.resize(flat, 731, 419, bands: 3, to: 300, 172)
        #expect(out == Array((0..<(300 * 172)).map { _ in colour }.joined()))
    }

    @Test func aResizedPhotoMatchesLibvipsLanczos3() throws {
        try VipsRuntime.ensureStarted()
        let photo = try RenderPipeline.thumbnail(try Photos.bytes("Garden"), edge: 1280)
        let (width, height) = (photo.width * 27 / 32, photo.height * 27 / 32)
        let ours = try pixels(of: photo.resampled(width: width, height: height))
        let theirs = try pixels(
            of: photo.map {
                splash_vips_resize2($0, $1, Double(width) / Double(photo.width), Double(height) / Double(photo.height))
            }
        )
        #expect((ours.width, ours.height) == (width, height))
        // Two implementations of one kernel: edges and rounding differ, the picture does not.
        let difference = ours.difference(from: theirs)
        #expect(difference.mean <= 0.1 && difference.max <= 8, "mean \(difference.mean), max \(difference.max)")
    }

    /// Runs `stages` over pixels of floats (or of bytes) into the same.
    static func chain<Value: Numeric>(_ values: [Value], width: Int, height: Int, _ stages: [splash_point_stage]) -> [Value] {
        let isFloat: Int32 = Value.self == Float.self ? 1 : 0
        var out = [Value](repeating: 0, count: values.count)
        let status = values.withUnsafeBytes { source in
            out.withUnsafeMutableBytes { target in
                splash_point_chain(source.baseAddress, isFloat, target.baseAddress, isFloat, Int32(width), Int32(height), stages, Int32(stages.count))
            }
        }
        #expect(status == 0)
        return out
    }

    @Test func pointStagesComputeTheirFormulas() {
        let (width, height) = (37, 23)
        let values = Self.noise(width: width, height: height, bands: 3, seed: 7).map { Float($0) }
        let stages: [splash_point_stage] = [
            .affine((0.5, 0.25, 0.25, 0, 1, 0, 0.1, 0.2, 0.7), offset: (10, -20, 0)),
            .vibrance(-3 * 0.6 / 255),
            .vignette(amount: 0.8, inner: 0.4, outer: 1),
        ]
        let out = Self.chain(values, width: width, height: height, stages)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let (r, g, b) = (Double(values[i]), Double(values[i + 1]), Double(values[i + 2]))
                var c = [0.5 * r + 0.25 * g + 0.25 * b + 10, g - 20, 0.1 * r + 0.2 * g + 0.7 * b]
                let (average, maximum) = (c.reduce(0, +) / 3, c.max()!)
                let t = (maximum - average) * (-3 * 0.6 / 255)
                c = c.map { $0 + (maximum - $0) * t }
                let dx = Double(x) + 0.5 - Double(width) / 2
                let dy = Double(y) + 0.5 - Double(height) / 2
                let d = ((dx * dx + dy * dy) / (Double(width * width + height * height) / 4)).squareRoot()
                let s = min(max((d - 0.4) / 0.6, 0), 1)
                let factor = 1 - 0.8 * s * s * (3 - 2 * s)
                for band in 0..<3 {
                    #expect(abs(Double(out[i + band]) - c[band] * factor) < 0.01, "pixel (\(x), \(y)) band \(band)")
                }
            }
        }
    }

    @Test(arguments: [(37, 23), (1080, 675), (5, 3)])
    func thePointChainGivesTheSameLevelsWithAndWithoutAVX2(_ width: Int, _ height: Int) {
        let values = Self.noise(width: width, height: height, bands: 3, seed: 11)
        let stages: [splash_point_stage] = [
            .affine((0.393, 0.769, 0.189, 0.349, 0.686, 0.168, 0.272, 0.534, 0.131)),
            .vibrance(-3 * 0.4 / 255),
            .vignette(amount: 0.6, inner: 0.3, outer: 1.1),
        ]
        let results = Self.atEveryLevel { Self.chain(values, width: width, height: height, stages) }
        #expect(firstDifference(results[2], results[0]) == nil, "AVX2 against the baseline")
    }

    @Test func aCurveClampsItsInputAndLooksItsTableUp() {
        let table = (0..<65_536).map { Float($0) / 65_535 * 100 }
        let values: [Float] = [-40, 0, 127.5, 255, 300, .nan]
        var curve = splash_point_stage()
        curve.kind = SPLASH_STAGE_CURVE
        let out = table.withUnsafeBufferPointer { table in
            curve.table = table.baseAddress
            return Self.chain(values, width: 2, height: 1, [curve])
        }
        #expect(out.map { ($0 * 100).rounded() / 100 } == [0, 0, 50, 100, 100, 0])
    }

    @Test func eightBitOutputRoundsToTheNearestLevelAndClips() {
        let values: [Float] = [-3, 0.49, 0.5, 127.4, 254.6, 300, .nan, .infinity, -.infinity]
        var out = [UInt8](repeating: 1, count: values.count)
        let status = values.withUnsafeBytes { source in
            out.withUnsafeMutableBytes { target in
                splash_point_chain(source.baseAddress, 1, target.baseAddress, 0, 3, 1, nil, 0)
            }
        }
        #expect(status == 0)
        #expect(out == [0, 0, 1, 127, 255, 255, 0, 255, 0])
    }
}

extension splash_point_stage {
    static func affine(_ matrix: (Float, Float, Float, Float, Float, Float, Float, Float, Float), offset: (Float, Float, Float) = (0, 0, 0)) -> Self {
        var stage = splash_point_stage()
        (stage.kind, stage.matrix, stage.offset) = (SPLASH_STAGE_AFFINE, matrix, offset)
        return stage
    }

    static func vibrance(_ amount: Float) -> Self {
        var stage = splash_point_stage()
        (stage.kind, stage.amount) = (SPLASH_STAGE_VIBRANCE, amount)
        return stage
    }

    static func vignette(amount: Float, inner: Float, outer: Float) -> Self {
        var stage = splash_point_stage()
        (stage.kind, stage.amount, stage.inner, stage.outer) = (SPLASH_STAGE_VIGNETTE, amount, inner, outer)
        return stage
    }
}
