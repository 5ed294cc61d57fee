import CVips
import PixelKernels

extension FilterChain {
    /// Runs the chain over `image` (three 8-bit sRGB bands) and returns three 8-bit bands.
    ///
    /// Runs of point stages (colour matrices, curves, vibrance, vignette) go through
    /// `splash_point_chain` in one pass each, on float values; a blur or a sharpen runs in libvips
    /// on float pixels between such runs. Values are rounded to 8 bits once, at the end.
    /// `width1080Scale` is the output's width over 1080 (pixel radii are defined at 1080 wide).
    func render(_ image: VImage, width1080Scale scale: Double) throws(VipsFailure) -> VImage {
        var current = image
        var run: [FilterStage] = []
        for stage in stages {
            if stage.isPoint {
                run.append(stage)
                continue
            }
            current = try FilterStage.runPointStages(run, on: current, output: VIPS_FORMAT_FLOAT)
            run = []
            current = try stage.applyNeighbourhood(to: current, width1080Scale: scale)
        }
        return try FilterStage.runPointStages(run, on: current, output: VIPS_FORMAT_UCHAR)
    }
}

extension FilterStage {
    /// Whether the stage reads one pixel to write that pixel.
    var isPoint: Bool {
        switch self {
        case .affine, .curve, .vibrance, .vignette: true
        case .gaussianBlur, .sharpen: false
        }
    }

    /// A blur or a sharpen on three float bands in 0…255; returns the same layout.
    func applyNeighbourhood(to image: VImage, width1080Scale scale: Double) throws(VipsFailure) -> VImage {
        switch self {
        case .gaussianBlur(let radius):
            let sigma = radius / 2 * scale
            guard sigma >= 0.05 else { return image }
            return try image.map { splash_vips_gaussblur($0, $1, sigma) }
        case .sharpen(let sharpness, let radius):
            let sigma = radius / 2 * scale
            guard sigma >= 0.05 else { return image }
            let sharpened = try image.map { splash_vips_sharpen($0, $1, sigma, sharpness) }
            return try sharpened.map { splash_vips_cast($0, $1, VIPS_FORMAT_FLOAT) }
        case .affine, .curve, .vibrance, .vignette:
            preconditionFailure("a point stage runs in runPointStages")
        }
    }

    /// `stages` (all point stages, possibly none) over a three-band 8-bit or float image, written
    /// as `output` (`VIPS_FORMAT_UCHAR`, rounded, or `VIPS_FORMAT_FLOAT`).
    static func runPointStages(_ stages: [FilterStage], on image: VImage, output: VipsBandFormat) throws(VipsFailure) -> VImage {
        if stages.isEmpty, image.format == output { return image }
        var input = image
        // The kernel reads three bands of 8-bit or float values and nothing else.
        guard input.bands == 3 else { throw VipsFailure(message: "the filters take three bands, not \(input.bands)") }
        if input.format != VIPS_FORMAT_UCHAR, input.format != VIPS_FORMAT_FLOAT {
            input = try input.map { splash_vips_cast($0, $1, VIPS_FORMAT_FLOAT) }
        }
        // Every curve's table, back to back; each stage points into this one buffer.
        let tables = stages.flatMap { stage -> [Float] in
            guard case .curve(let curve) = stage else { return [] }
            return (0..<65_536).map { Float(curve.value(at: Double($0) / 65_535) * 255) }
        }
        let (width, height, inputIsFloat) = (input.width, input.height, input.format == VIPS_FORMAT_FLOAT)
        return try input.withPixels { pixels throws(VipsFailure) in
            try VImage.filled(width: width, height: height, bands: 3, format: output) { target in
                tables.withUnsafeBufferPointer { tables in
                    var described = stages.map(\.kernelStage)
                    var next = 0
                    for index in described.indices where described[index].kind == SPLASH_STAGE_CURVE {
                        described[index].table = tables.baseAddress.map { UnsafePointer($0 + next * 65_536) }
                        next += 1
                    }
                    return splash_point_chain(
                        pixels,
                        inputIsFloat ? 1 : 0,
                        target,
                        output == VIPS_FORMAT_FLOAT ? 1 : 0,
                        Int32(width),
                        Int32(height),
                        described,
                        Int32(described.count)
                    ) == 0
                }
            }
        }
    }

    /// The stage as `splash_point_chain` takes it; a curve's table is filled in by the caller.
    private var kernelStage: splash_point_stage {
        var stage = splash_point_stage()
        switch self {
        case .affine(let matrix):
            stage.kind = SPLASH_STAGE_AFFINE
            let m = matrix.m.map(Float.init)
            let offset = matrix.offset.map { Float($0 * 255) }
            stage.matrix = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
            stage.offset = (offset[0], offset[1], offset[2])
        case .curve:
            stage.kind = SPLASH_STAGE_CURVE
        case .vibrance(let amount):
            // Values are 0…255 here and the formula's are 0…1, hence the 255.
            stage.kind = SPLASH_STAGE_VIBRANCE
            stage.amount = Float(-3 * amount / 255)
        case .vignette(let intensity, let radius):
            stage.kind = SPLASH_STAGE_VIGNETTE
            stage.amount = Float(intensity)
            stage.inner = Float(0.4 * radius)
            stage.outer = Float(radius)
        case .gaussianBlur, .sharpen:
            preconditionFailure("not a point stage")
        }
        return stage
    }
}
