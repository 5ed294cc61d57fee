import Foundation

/// A function applied to each channel alone, on values in 0…1 (the input clamped to that range):
/// rendered as a 16-bit lookup table, so any curve costs one table look-up per value.
package enum ToneCurve: Sendable, Equatable {
    /// Straight lines through points sorted by x, from (0, y₀) to (1, yₙ).
    case piecewiseLinear(x: [Double], y: [Double])
    /// c·2^ev in linear light: decoded from sRGB, scaled, encoded again (clipped at white).
    case exposure(ev: Double)

    /// `noir`'s S-curve.
    package static let noir = ToneCurve.piecewiseLinear(x: [0, 0.25, 0.5, 0.75, 1], y: [0, 0.16, 0.5, 0.84, 1])

    package func value(at input: Double) -> Double {
        let x = min(max(input, 0), 1)
        switch self {
        case .piecewiseLinear(let xs, let ys):
            guard let upper = xs.firstIndex(where: { $0 >= x }) else { return ys.last ?? x }
            guard upper > 0 else { return ys[0] }
            let fraction = (x - xs[upper - 1]) / (xs[upper] - xs[upper - 1])
            return ys[upper - 1] + fraction * (ys[upper] - ys[upper - 1])
        case .exposure(let ev):
            return SRGB.encode(min(SRGB.decode(x) * pow(2, ev), 1))
        }
    }
}

/// The sRGB transfer function (IEC 61966-2-1).
package enum SRGB {
    package static func decode(_ value: Double) -> Double {
        value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    package static func encode(_ linear: Double) -> Double {
        linear <= 0.0031308 ? linear * 12.92 : 1.055 * pow(linear, 1 / 2.4) - 0.055
    }
}
