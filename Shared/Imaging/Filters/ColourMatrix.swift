/// An affine colour transform on values in 0…1: c' = M·c + offset. Consecutive affine filters
/// compose into one, so a chain like `sepia`, `hue`, `colorControls` costs one pass over the pixels.
/// Values are not clamped between filters; composing is therefore exact.
package struct ColourMatrix: Sendable, Equatable {
    /// Row-major 3×3.
    package var m: [Double]
    package var offset: [Double]

    package init(_ m: [Double], offset: [Double] = [0, 0, 0]) {
        precondition(m.count == 9 && offset.count == 3)
        self.m = m
        self.offset = offset
    }

    package static let identity = ColourMatrix([1, 0, 0, 0, 1, 0, 0, 0, 1])

    /// Rec. 709 luma weights, the Y of `noir`, `mono`, `tonal` and the saturation filters.
    package static let luma: [Double] = [0.2126, 0.7152, 0.0722]

    /// Every channel becomes Y.
    package static let greyscale = ColourMatrix(luma + luma + luma)

    /// lerp(Y, c, s): s = 0 is grey, 1 is unchanged, above 1 extrapolates.
    package static func saturation(_ s: Double) -> ColourMatrix {
        let grey = greyscale.m
        return ColourMatrix((0..<9).map { index in (index % 4 == 0 ? s : 0) + (1 - s) * grey[index] })
    }

    /// Per-channel gains.
    package static func gains(_ r: Double, _ g: Double, _ b: Double) -> ColourMatrix {
        ColourMatrix([r, 0, 0, 0, g, 0, 0, 0, b])
    }

    /// c' = scale·c + shift on every channel.
    package static func linear(scale: Double, shift: Double) -> ColourMatrix {
        ColourMatrix([scale, 0, 0, 0, scale, 0, 0, 0, scale], offset: [shift, shift, shift])
    }

    /// Contrast `k` about mid-grey: (c − 0.5)·k + 0.5.
    package static func contrast(_ k: Double) -> ColourMatrix {
        linear(scale: k, shift: 0.5 - 0.5 * k)
    }

    /// This transform, then `next`.
    package func then(_ next: ColourMatrix) -> ColourMatrix {
        var product = [Double](repeating: 0, count: 9)
        var shifted = [Double](repeating: 0, count: 3)
        for row in 0..<3 {
            for column in 0..<3 {
                var sum = 0.0
                for k in 0..<3 { sum += next.m[row * 3 + k] * m[k * 3 + column] }
                product[row * 3 + column] = sum
            }
            var sum = next.offset[row]
            for k in 0..<3 { sum += next.m[row * 3 + k] * offset[k] }
            shifted[row] = sum
        }
        return ColourMatrix(product, offset: shifted)
    }

    package var isIdentity: Bool {
        let tolerance = 1e-9
        for index in 0..<9 where Swift.abs(m[index] - ColourMatrix.identity.m[index]) >= tolerance { return false }
        for value in offset where Swift.abs(value) >= tolerance { return false }
        return true
    }

    /// The matrix applied to one colour (for tests and the catalog's documentation).
    package func apply(_ c: [Double]) -> [Double] {
        var result = offset
        for row in 0..<3 {
            for column in 0..<3 { result[row] += m[row * 3 + column] * c[column] }
        }
        return result
    }
}
