import HTTPTypes

/// What a PostgREST request's headers ask for: `Prefer`, the shape `Accept` wants, the profile.
package struct RequestPreferences: Sendable, Equatable {
    package enum Returning: Sendable, Equatable { case minimal, representation, headersOnly }
    package enum Resolution: Sendable, Equatable { case mergeDuplicates, ignoreDuplicates }
    /// A bare JSON array, or `.single()`'s one bare object.
    package enum Shape: Sendable, Equatable { case array, object }

    package var returning: Returning = .minimal
    /// `count=exact` (also `planned` and `estimated`, which are answered exactly).
    package var count = false
    package var resolution: Resolution?
    /// `missing=default`: columns a row of a bulk insert lacks take their defaults (they do anyway).
    package var shape: Shape = .array

    package init() {}

    /// Reads `Prefer` (every such header, values comma-separated, spaces allowed), `Accept` and the
    /// profile headers. Unknown preferences are ignored, as PostgREST's lenient handling does.
    /// - Throws: 406 PGRST106 for a profile other than `public`, 406 PGRST107 for an `Accept`
    ///   that allows no JSON.
    package init(_ headers: HTTPFields) throws(DataAPIError) {
        for name in [HTTPField.Name.acceptProfile, .contentProfile] {
            if let profile = headers[name], profile.trimmingSpaces != "public" {
                throw DataAPIError(
                    .notAcceptable,
                    code: "PGRST106",
                    message: "The schema must be one of the following: public",
                    details: "Asked for \(profile)"
                )
            }
        }
        for value in headers[values: .prefer] {
            for preference in value.split(separator: ",") {
                switch preference.trimmingSpaces {
                case "return=minimal": returning = .minimal
                case "return=representation": returning = .representation
                case "return=headers-only": returning = .headersOnly
                case "count=exact", "count=planned", "count=estimated": count = true
                case "resolution=merge-duplicates": resolution = .mergeDuplicates
                case "resolution=ignore-duplicates": resolution = .ignoreDuplicates
                default: continue
                }
            }
        }
        if let accept = headers[.accept] {
            shape = try Self.shape(accepting: accept)
        }
    }

    private static func shape(accepting accept: String) throws(DataAPIError) -> Shape {
        var json = false
        for range in accept.split(separator: ",") {
            let type = range.split(separator: ";").first.map { $0.trimmingSpaces.lowercased() } ?? ""
            switch type {
            case "application/vnd.pgrst.object+json", "application/vnd.pgrst.object": return .object
            case "application/json", "application/*", "*/*", "": json = true
            default: continue
            }
        }
        guard json else {
            throw DataAPIError(.notAcceptable, code: "PGRST107", message: "None of these media types are available: \(accept)")
        }
        return .array
    }
}

extension HTTPField.Name {
    static let prefer = Self("Prefer")!
    static let acceptProfile = Self("Accept-Profile")!
    static let contentProfile = Self("Content-Profile")!
    static let preferenceApplied = Self("Preference-Applied")!
}
