/// Why a source cannot be rendered. Each case reads as a reason a person can act on; it is what a
/// failed edit reports and what a preview's 422 says.
package enum ImagingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not a JPEG, PNG, WebP, HEIF or AVIF; `detected` names what they look like instead.
    case unsupportedFormat(detected: String)
    /// The file is larger than the source limit.
    case fileTooLarge(bytes: Int, limit: Int)
    /// The header declares more pixels than the limit: refused before anything is decoded.
    case tooManyPixels(width: Int, height: Int, limit: Int)
    /// The file claims a supported format but cannot be decoded (truncated, corrupt).
    case unreadable(String)
    /// libvips failed while rendering a readable image.
    case renderFailed(String)
    /// libvips could not start.
    case unavailable(String)

    package var description: String {
        switch self {
        case .unsupportedFormat(let detected):
            return "The photo is \(detected), not a JPEG, PNG, WebP, HEIF or AVIF."
        case .fileTooLarge(let bytes, let limit):
            return "The photo is \(megabytes(bytes)); photos up to \(megabytes(limit)) can be edited."
        case .tooManyPixels(let width, let height, let limit):
            return "The photo is \(width)×\(height) pixels; photos up to \(limit / 1_000_000) megapixels can be edited."
        case .unreadable(let detail):
            return "The photo cannot be read; the file is damaged or incomplete (\(detail))."
        case .renderFailed(let detail):
            return "The photo could not be rendered (\(detail))."
        case .unavailable(let detail):
            return "The image library is unavailable (\(detail))."
        }
    }
}

private func megabytes(_ bytes: Int) -> String {
    let value = Double(bytes) / 1_048_576
    return value >= 10 ? "\(Int(value.rounded())) MB" : "\((value * 10).rounded() / 10) MB"
}
