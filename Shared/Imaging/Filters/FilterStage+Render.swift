import CVips
import Synchronization

extension FilterStage {
    /// Applies the stage to `image`: three float bands in 0…255 (sRGB), `width1080Scale` the
    /// output's width over 1080 (pixel radii are defined at 1080 wide). Returns the same layout.
    func apply(to image: VImage, width1080Scale scale: Double) throws(VipsFailure) -> VImage {
        switch self {
        case .affine(let matrix):
            let m = try VImage.matrix(width: 3, height: 3, values: matrix.m)
            let recombined = try image.map { splash_vips_recomb($0, $1, m.pointer) }
            withExtendedLifetime(m) {}
            guard matrix.offset.contains(where: { $0 != 0 }) else { return recombined }
            return try recombined.linear(scale: [1, 1, 1], shift: matrix.offset.map { $0 * 255 })
        case .curve(let curve):
            return try image.applyingCurve(curve)
        case .vibrance(let amount):
            return try image.vibrance(amount)
        case .vignette(let intensity, let radius):
            return try image.vignette(intensity: intensity, radius: radius)
        case .gaussianBlur(let radius):
            let sigma = radius / 2 * scale
            guard sigma >= 0.05 else { return image }
            return try image.map { splash_vips_gaussblur($0, $1, sigma) }
        case .sharpen(let sharpness, let radius):
            let sigma = radius / 2 * scale
            guard sigma >= 0.05 else { return image }
            let sharpened = try image.map { splash_vips_sharpen($0, $1, sigma, sharpness) }
            return try sharpened.map { splash_vips_cast($0, $1, VIPS_FORMAT_FLOAT) }
        }
    }
}

extension VImage {
    /// c' = scale·c + shift, per band.
    func linear(scale: [Double], shift: [Double]) throws(VipsFailure) -> VImage {
        try map { input, out in
            scale.withUnsafeBufferPointer { a in
                shift.withUnsafeBufferPointer { b in splash_vips_linear(input, out, a.baseAddress, b.baseAddress, Int32(a.count)) }
            }
        }
    }

    /// `curve` on every band through a 65,536-entry table: values scaled to 0…65535 and clipped
    /// by the cast to 16 bits, looked up, back to 0…255.
    func applyingCurve(_ curve: ToneCurve) throws(VipsFailure) -> VImage {
        let table = try VImage.lookupTable((0..<65_536).map { Float(curve.value(at: Double($0) / 65_535) * 255) })
        return try lookUp(table, inputScale: 65_535.0 / 255)
    }

    /// Indexes `table` (65,536 wide) with this image's values times `inputScale`.
    func lookUp(_ table: VImage, inputScale: Double) throws(VipsFailure) -> VImage {
        let index = try linear(scale: Array(repeating: inputScale, count: bands), shift: Array(repeating: 0.5, count: bands))
            .map { splash_vips_cast($0, $1, VIPS_FORMAT_USHORT) }
        let mapped = try index.map { splash_vips_maplut($0, $1, table.pointer) }
        withExtendedLifetime(table) {}
        return mapped
    }

    /// avg = mean of R, G, B; mx = their max; t = (mx − avg)·(−3·amount); c' = c + (mx − c)·t.
    func vibrance(_ amount: Double) throws(VipsFailure) -> VImage {
        let average = try map { splash_vips_bandmean($0, $1) }
        let (r, g, b) = (try band(0), try band(1), try band(2))
        let maximum = try VImage.make { splash_vips_bandrank_max3(r.pointer, g.pointer, b.pointer, $0) }
        let spread = try VImage.make { splash_vips_subtract(maximum.pointer, average.pointer, $0) }
        // Values are 0…255 here and the formula's are 0…1, hence the 255.
        let t = try spread.linear(scale: [-3 * amount / 255], shift: [0])
        let towardMax = try VImage.make { splash_vips_subtract(maximum.pointer, self.pointer, $0) }
        let step = try VImage.make { splash_vips_multiply(towardMax.pointer, t.pointer, $0) }
        return try VImage.make { splash_vips_add(self.pointer, step.pointer, $0) }
    }

    /// c' = c·(1 − intensity·smoothstep(0.4·radius, radius, d)), d the distance from the centre
    /// over the half-diagonal. The factor image depends only on the size and the parameters, so it
    /// is computed once per combination and kept (`VignetteMask.factors`).
    func vignette(intensity: Double, radius: Double) throws(VipsFailure) -> VImage {
        let factor = try VignetteMask.factors(width: width, height: height, intensity: intensity, radius: radius)
        return try VImage.make { splash_vips_multiply(self.pointer, factor.pointer, $0) }
    }

    func band(_ index: Int) throws(VipsFailure) -> VImage {
        try map { splash_vips_extract_band($0, $1, Int32(index), 1) }
    }
}

/// The vignette's factor per pixel, for one size and one set of parameters.
///
/// Computed from each pixel's squared distance (no square root per pixel: the factor is looked up
/// from d²), materialized, and kept: a worker renders photo after photo at the same few output
/// sizes (1080 on the long edge), and the factor image costs several passes to make. Kept images
/// are in memory and never written again, so renders on other threads may read them; at most
/// `budget` bytes are kept, the oldest let go first.
enum VignetteMask {
    private struct Key: Hashable {
        var width: Int, height: Int, intensity: Double, radius: Double
    }

    /// A materialized image no one writes to again; libvips reads such images from any thread.
    private final class Kept: @unchecked Sendable {
        let image: VImage
        init(_ image: VImage) { self.image = image }
        var bytes: Int { image.width * image.height * 4 }
    }

    static let budget = 32 << 20
    private static let kept = Mutex<(images: [Key: Kept], order: [Key])>(([:], []))

    static func factors(width: Int, height: Int, intensity: Double, radius: Double) throws(VipsFailure) -> VImage {
        let key = Key(width: width, height: height, intensity: intensity, radius: radius)
        if let hit = kept.withLock({ $0.images[key] }) { return hit.image }
        let made = Kept(try compute(width: width, height: height, intensity: intensity, radius: radius).materialized())
        guard made.bytes <= budget / 4 else { return made.image }
        kept.withLock { state in
            guard state.images[key] == nil else { return }
            state.images[key] = made
            state.order.append(key)
            var total = state.images.values.reduce(0) { $0 + $1.bytes }
            while total > budget, let oldest = state.order.first {
                state.order.removeFirst()
                total -= state.images.removeValue(forKey: oldest)?.bytes ?? 0
            }
        }
        return made.image
    }

    private static func compute(width: Int, height: Int, intensity: Double, radius: Double) throws(VipsFailure) -> VImage {
        let squaredDistance = try squaredDistance(width: width, height: height)
        let (inner, outer) = (0.4 * radius, radius)
        let factors = try VImage.lookupTable((0..<65_536).map { index in
            let d = (Double(index) / 65_535).squareRoot()
            let t = outer > inner ? min(max((d - inner) / (outer - inner), 0), 1) : (d >= outer ? 1 : 0)
            return Float(1 - intensity * t * t * (3 - 2 * t))
        })
        return try squaredDistance.lookUp(factors, inputScale: 65_535)
    }

    /// Each pixel's squared distance from the centre over the squared half-diagonal (0 at the
    /// centre, 1 in the corners).
    static func squaredDistance(width: Int, height: Int) throws(VipsFailure) -> VImage {
        let coordinates = try VImage.make { splash_vips_xyz($0, Int32(width), Int32(height)) }
        // Pixel centres, relative to the image's centre.
        let centred = try coordinates.linear(scale: [1, 1], shift: [0.5 - Double(width) / 2, 0.5 - Double(height) / 2])
        let squares = try VImage.make { splash_vips_multiply(centred.pointer, centred.pointer, $0) }
        let halfDiagonalSquared = (Double(width * width) + Double(height * height)) / 4
        // The mean of the two squares is half their sum.
        let mean = try squares.map { splash_vips_bandmean($0, $1) }
        return try mean.linear(scale: [2 / halfDiagonalSquared], shift: [0])
    }
}
