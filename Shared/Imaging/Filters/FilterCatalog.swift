/// One numeric parameter of a filter: its default and the range the apps may send.
package struct FilterParameter: Sendable, Equatable, Encodable {
    package var name: String
    package var defaultValue: Double
    package var minimum: Double
    package var maximum: Double
    /// What the number measures, for the catalog (`"pixels at 1080 wide"`, `"radians"`, …).
    package var unit: String?

    private enum CodingKeys: String, CodingKey {
        case name
        case defaultValue = "default"
        case minimum, maximum, unit
    }
}

/// A filter the apps can apply: Splash's name, the Core Image filter it matches, its parameters.
package struct FilterDefinition: Sendable, Equatable, Encodable {
    package var name: String
    package var coreImageName: String
    package var parameters: [FilterParameter]
    package var summary: String

    private enum CodingKeys: String, CodingKey { case name, coreImageName, parameters, summary }

    package func parameter(_ name: String) -> FilterParameter? {
        parameters.first { $0.name == name }
    }
}

/// Every filter of Services/EditRender/README.md ("Filters"), in the order listed there.
package enum FilterCatalog {
    package static let all: [FilterDefinition] = [
        FilterDefinition(
            name: "sepia",
            coreImageName: "CISepiaTone",
            parameters: [
                FilterParameter(name: "intensity", defaultValue: 1, minimum: 0, maximum: 1)
            ],
            summary: "Warm brown tones; intensity mixes them with the original."
        ),
        FilterDefinition(name: "noir", coreImageName: "CIPhotoEffectNoir", parameters: [], summary: "Black and white with strong contrast."),
        FilterDefinition(name: "mono", coreImageName: "CIPhotoEffectMono", parameters: [], summary: "Black and white with low contrast."),
        FilterDefinition(name: "tonal", coreImageName: "CIPhotoEffectTonal", parameters: [], summary: "Black and white, contrast unchanged."),
        FilterDefinition(name: "chrome", coreImageName: "CIPhotoEffectChrome", parameters: [], summary: "More saturation and contrast."),
        FilterDefinition(name: "fade", coreImageName: "CIPhotoEffectFade", parameters: [], summary: "Less saturation, lifted blacks."),
        FilterDefinition(name: "instant", coreImageName: "CIPhotoEffectInstant", parameters: [], summary: "Warm, slightly faded instant-film look."),
        FilterDefinition(name: "process", coreImageName: "CIPhotoEffectProcess", parameters: [], summary: "Cool tones with more contrast."),
        FilterDefinition(
            name: "transfer",
            coreImageName: "CIPhotoEffectTransfer",
            parameters: [],
            summary: "Warm tones with a little more contrast."
        ),
        FilterDefinition(
            name: "colorControls",
            coreImageName: "CIColorControls",
            parameters: [
                FilterParameter(name: "brightness", defaultValue: 0, minimum: -1, maximum: 1),
                FilterParameter(name: "contrast", defaultValue: 1, minimum: 0, maximum: 4),
                FilterParameter(name: "saturation", defaultValue: 1, minimum: 0, maximum: 2),
            ],
            summary: "Brightness, contrast and saturation."
        ),
        FilterDefinition(
            name: "exposure",
            coreImageName: "CIExposureAdjust",
            parameters: [
                FilterParameter(name: "ev", defaultValue: 0, minimum: -10, maximum: 10, unit: "stops")
            ],
            summary: "Exposure in stops, in linear light."
        ),
        FilterDefinition(
            name: "vibrance",
            coreImageName: "CIVibrance",
            parameters: [
                FilterParameter(name: "amount", defaultValue: 0, minimum: -1, maximum: 1)
            ],
            summary: "Saturation that spares already saturated colours."
        ),
        FilterDefinition(
            name: "hue",
            coreImageName: "CIHueAdjust",
            parameters: [
                FilterParameter(name: "angle", defaultValue: 0, minimum: -.pi, maximum: .pi, unit: "radians")
            ],
            summary: "Rotates every hue by an angle."
        ),
        FilterDefinition(
            name: "temperature",
            coreImageName: "CITemperatureAndTint",
            parameters: [
                FilterParameter(name: "temperature", defaultValue: 6500, minimum: 2000, maximum: 50000, unit: "kelvin"),
                FilterParameter(name: "tint", defaultValue: 0, minimum: -150, maximum: 150),
            ],
            summary: "White balance: colour temperature and green–magenta tint."
        ),
        FilterDefinition(
            name: "vignette",
            coreImageName: "CIVignette",
            parameters: [
                FilterParameter(name: "intensity", defaultValue: 0, minimum: -1, maximum: 1),
                FilterParameter(name: "radius", defaultValue: 1, minimum: 0, maximum: 2, unit: "fraction of the half-diagonal"),
            ],
            summary: "Darkens (or lightens) the corners."
        ),
        FilterDefinition(
            name: "gaussianBlur",
            coreImageName: "CIGaussianBlur",
            parameters: [
                FilterParameter(name: "radius", defaultValue: 10, minimum: 0, maximum: 100, unit: "pixels at 1080 wide")
            ],
            summary: "Gaussian blur, σ = radius / 2."
        ),
        FilterDefinition(
            name: "sharpen",
            coreImageName: "CISharpenLuminance",
            parameters: [
                FilterParameter(name: "sharpness", defaultValue: 0.4, minimum: 0, maximum: 2),
                FilterParameter(name: "radius", defaultValue: 1.69, minimum: 0, maximum: 20, unit: "pixels at 1080 wide"),
            ],
            summary: "Unsharp mask on luminance only."
        ),
        FilterDefinition(name: "invert", coreImageName: "CIColorInvert", parameters: [], summary: "Inverts the colours; alpha is kept."),
    ]

    private static let byName: [String: FilterDefinition] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    package static func definition(named name: String) -> FilterDefinition? {
        byName[name]
    }
}
