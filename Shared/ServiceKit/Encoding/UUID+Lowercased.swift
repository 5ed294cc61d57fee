import Foundation

extension UUID {
    /// The lower-case form ids take in keys, URLs and JSON (Foundation writes upper case).
    package var lowercased: String { uuidString.lowercased() }
}
