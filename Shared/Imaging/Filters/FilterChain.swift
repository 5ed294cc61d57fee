import Contracts
import Foundation

/// A filter step the apps sent that Splash cannot apply: `field` names it the way the request
/// spells it (`filters[1].intensity`), `message` says what is wrong.
package struct FilterValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    package var field: String
    package var message: String

    package var description: String { "\(field): \(message)" }
}

/// What the renderer does to the pixels, compiled from validated filter steps.
package enum FilterStage: Sendable, Equatable {
    case affine(ColourMatrix)
    case curve(ToneCurve)
    case vibrance(amount: Double)
    case vignette(intensity: Double, radius: Double)
    /// `radius` in pixels at 1080 wide.
    case gaussianBlur(radius: Double)
    /// `radius` in pixels at 1080 wide.
    case sharpen(sharpness: Double, radius: Double)
}

/// A validated chain of filters: every name known, every parameter known and in range, the
/// defaults filled in — and its stages, with consecutive colour transforms merged into one and
/// steps that change nothing left out.
package struct FilterChain: Sendable, Equatable {
    /// At most this many steps in one edit.
    package static let maxSteps = 32

    /// The steps as given, each with every parameter (defaults filled in).
    package let steps: [FilterStep]
    package let stages: [FilterStage]

    /// No filter: the pixels as decoded.
    package static let none = FilterChain(steps: [], stages: [])

    private init(steps: [FilterStep], stages: [FilterStage]) {
        self.steps = steps
        self.stages = stages
    }

    /// - Throws: `FilterValidationError` naming the first offending field.
    package init(_ requested: [FilterStep]) throws(FilterValidationError) {
        guard requested.count <= Self.maxSteps else {
            throw FilterValidationError(field: "filters", message: "at most \(Self.maxSteps) filters per edit, got \(requested.count)")
        }
        var steps: [FilterStep] = []
        var stages: [FilterStage] = []
        for (index, step) in requested.enumerated() {
            let filled = try Self.validate(step, at: "filters[\(index)]")
            steps.append(filled)
            stages += try Self.stages(of: filled, at: "filters[\(index)]")
        }
        self.steps = steps
        self.stages = Self.merge(stages)
    }

    private static func validate(_ step: FilterStep, at path: String) throws(FilterValidationError) -> FilterStep {
        guard let definition = FilterCatalog.definition(named: step.name) else {
            throw FilterValidationError(field: "\(path).name", message: "unknown filter '\(step.name)'; see GET /v1/filters")
        }
        for name in step.parameters.keys.sorted() where definition.parameter(name) == nil {
            let known = definition.parameters.map(\.name)
            throw FilterValidationError(
                field: "\(path).\(name)",
                message: known.isEmpty
                    ? "\(definition.name) takes no parameters"
                    : "not a parameter of \(definition.name) (\(known.joined(separator: ", ")))"
            )
        }
        var filled = FilterStep(name: definition.name)
        for parameter in definition.parameters {
            let value = step.parameters[parameter.name] ?? parameter.defaultValue
            guard value.isFinite, value >= parameter.minimum, value <= parameter.maximum else {
                throw FilterValidationError(
                    field: "\(path).\(parameter.name)",
                    message: "must be between \(format(parameter.minimum)) and \(format(parameter.maximum)), got \(format(value))"
                )
            }
            filled.parameters[parameter.name] = value
        }
        return filled
    }

    /// The stages of a validated step (every parameter filled in).
    private static func stages(of step: FilterStep, at path: String) throws(FilterValidationError) -> [FilterStage] {
        func p(_ name: String) throws(FilterValidationError) -> Double {
            guard let value = step.parameters[name] else { throw FilterValidationError(field: "\(path).\(name)", message: "is missing") }
            return value
        }
        switch step.name {
        case "sepia":
            let i = try p("intensity")
            let sepia: [Double] = [0.3588, 0.7044, 0.1368, 0.2990, 0.5870, 0.1140, 0.2392, 0.4696, 0.0912]
            return [.affine(ColourMatrix((0..<9).map { i * sepia[$0] + (1 - i) * ColourMatrix.identity.m[$0] }))]
        case "noir":
            return [.affine(.greyscale), .curve(.noir)]
        case "mono":
            return [.affine(ColourMatrix.greyscale.then(.linear(scale: 0.84, shift: 0.08)))]
        case "tonal":
            return [.affine(.greyscale)]
        case "chrome":
            return [.affine(ColourMatrix.saturation(1.25).then(.contrast(1.10)))]
        case "fade":
            return [.affine(ColourMatrix.saturation(0.75).then(.linear(scale: 0.80, shift: 0.12)))]
        case "instant":
            return [.affine(ColourMatrix.saturation(0.90).then(.gains(1.06, 1.00, 0.90)).then(.linear(scale: 0.93, shift: 0.05)))]
        case "process":
            return [.affine(ColourMatrix.gains(0.92, 1.00, 1.10).then(.contrast(1.10)))]
        case "transfer":
            return [.affine(ColourMatrix.gains(1.10, 1.02, 0.90).then(.contrast(1.05)))]
        case "colorControls":
            return [
                .affine(
                    ColourMatrix.saturation(try p("saturation")).then(.contrast(try p("contrast"))).then(
                        .linear(scale: 1, shift: try p("brightness"))
                    )
                )
            ]
        case "exposure":
            return try p("ev") == 0 ? [] : [.curve(.exposure(ev: try p("ev")))]
        case "vibrance":
            return try p("amount") == 0 ? [] : [.vibrance(amount: try p("amount"))]
        case "hue":
            return [.affine(hueRotation(try p("angle")))]
        case "temperature":
            return [.affine(whiteBalance(kelvin: try p("temperature"), tint: try p("tint")))]
        case "vignette":
            return try p("intensity") == 0 ? [] : [.vignette(intensity: try p("intensity"), radius: try p("radius"))]
        case "gaussianBlur":
            return try p("radius") == 0 ? [] : [.gaussianBlur(radius: try p("radius"))]
        case "sharpen":
            let (sharpness, radius) = (try p("sharpness"), try p("radius"))
            return sharpness == 0 || radius == 0 ? [] : [.sharpen(sharpness: sharpness, radius: radius)]
        case "invert":
            return [.affine(.linear(scale: -1, shift: 1))]
        default:
            throw FilterValidationError(field: "\(path).name", message: "unknown filter '\(step.name)'; see GET /v1/filters")
        }
    }

    /// Consecutive affine stages become one; identities go.
    private static func merge(_ stages: [FilterStage]) -> [FilterStage] {
        var merged: [FilterStage] = []
        for stage in stages {
            if case .affine(let next) = stage, case .affine(let previous)? = merged.last {
                merged[merged.count - 1] = .affine(previous.then(next))
            } else {
                merged.append(stage)
            }
        }
        return merged.filter { if case .affine(let matrix) = $0 { !matrix.isIdentity } else { true } }
    }

    /// The W3C `feColorMatrix` `hueRotate` matrix.
    static func hueRotation(_ angle: Double) -> ColourMatrix {
        let (c, s) = (cos(angle), sin(angle))
        return ColourMatrix([
            0.213 + c * 0.787 - s * 0.213, 0.715 - c * 0.715 - s * 0.715, 0.072 - c * 0.072 + s * 0.928,
            0.213 - c * 0.213 + s * 0.143, 0.715 + c * 0.285 + s * 0.140, 0.072 - c * 0.072 - s * 0.283,
            0.213 - c * 0.213 - s * 0.787, 0.715 - c * 0.715 + s * 0.715, 0.072 + c * 0.928 + s * 0.072,
        ])
    }

    /// Gains that turn 6500 K white into the white of `kelvin` (Tanner Helland's approximation of
    /// the black-body colour), and scale green by 1 − tint/500.
    static func whiteBalance(kelvin: Double, tint: Double) -> ColourMatrix {
        let target = blackBody(kelvin)
        let neutral = blackBody(6500)
        return .gains(target[0] / neutral[0], target[1] / neutral[1] * (1 - tint / 500), target[2] / neutral[2])
    }

    /// The RGB (0…255) of a black body at `kelvin`, after Tanner Helland.
    static func blackBody(_ kelvin: Double) -> [Double] {
        let t = kelvin / 100
        let red = t <= 66 ? 255 : 329.698727446 * pow(t - 60, -0.1332047592)
        let green = t <= 66 ? 99.4708025861 * log(t) - 161.1195681661 : 288.1221695283 * pow(t - 60, -0.0755148492)
        let blue = t >= 66 ? 255 : (t <= 19 ? 0 : 138.5177312231 * log(t - 10) - 305.0447927307)
        return [red, green, blue].map { min(max($0, 0), 255) }
    }
}

private func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
}
