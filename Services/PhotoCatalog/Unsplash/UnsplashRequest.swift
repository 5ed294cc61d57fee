import Contracts
import Foundation
import ServiceKit

/// One validated question to Unsplash, in normal form: two requests that ask the same thing (a
/// query differing only in case or spacing, parameters in another order, a default spelled out)
/// have the same `cacheKey`, so they share one cache entry and one upstream call.
struct UnsplashRequest: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case list
        case photo
        case search
        /// A pool of random photos for one filter; `/v1/photos/random` answers are drawn from it.
        case randomPool
    }

    var kind: Kind
    /// Unsplash's path, relative to its base URL (`photos`, `photos/abc`, `search/photos`).
    var path: String
    /// The parameters sent upstream, sorted by name: part of the key.
    var parameters: [(name: String, value: String)]
    /// The page asked for and its size, for the pagination headers (`nil` where Unsplash has none).
    var page: Int?
    var perPage: Int?

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.cacheKey == rhs.cacheKey }
    func hash(into hasher: inout Hasher) { hasher.combine(cacheKey) }

    /// `path?name=value&…` with values percent-encoded: the cache key and the upstream path.
    var cacheKey: String {
        parameters.isEmpty ? path : path + "?" + QueryString.encode(parameters)
    }

    /// The parameters other than `page`, for building the links to other pages.
    var parametersExceptPage: [(name: String, value: String)] {
        parameters.filter { $0.name != "page" }
    }

    private init(kind: Kind, path: String, parameters: [(String, String)], page: Int? = nil, perPage: Int? = nil) {
        self.kind = kind
        self.path = path
        self.parameters = parameters.map { (name: $0.0, value: $0.1) }.sorted { $0.name < $1.name }
        self.page = page
        self.perPage = perPage
    }

    // MARK: Parsing the app's requests

    /// The largest page number accepted: far beyond any real result set, small enough to keep
    /// arithmetic on it safe.
    static let maxPage = 100_000
    static let maxPerPage = 30

    /// `GET /v1/photos`.
    static func list(_ query: QueryString) throws(Problem) -> UnsplashRequest {
        var errors: [FieldError] = []
        let page = query.integer("page", default: 1, in: 1...maxPage, errors: &errors)
        let perPage = query.integer("per_page", default: 10, in: 1...maxPerPage, errors: &errors)
        try throwIfAny(errors)
        return UnsplashRequest(
            kind: .list,
            path: "photos",
            parameters: [("page", "\(page)"), ("per_page", "\(perPage)")],
            page: page,
            perPage: perPage
        )
    }

    /// The photo a `.photo` request asks for.
    var photoID: String? {
        kind == .photo ? String(path.dropFirst("photos/".count)) : nil
    }

    /// `GET /v1/photos/{id}`; `nil` when `id` cannot be an Unsplash photo id.
    static func photo(id: String) -> UnsplashRequest? {
        guard UnsplashPhotoID.isValid(id) else { return nil }
        return UnsplashRequest(kind: .photo, path: "photos/\(id)", parameters: [])
    }

    static let orders = ["relevant", "latest"]
    static let contentFilters = ["low", "high"]
    static let colors = ["black_and_white", "black", "white", "yellow", "orange", "red", "purple", "magenta", "green", "teal", "blue"]
    static let orientations = ["landscape", "portrait", "squarish"]

    /// `GET /v1/search/photos`.
    static func search(_ query: QueryString) throws(Problem) -> UnsplashRequest {
        var errors: [FieldError] = []
        let text = query.searchText("query", required: true, errors: &errors)
        let page = query.integer("page", default: 1, in: 1...maxPage, errors: &errors)
        let perPage = query.integer("per_page", default: 10, in: 1...maxPerPage, errors: &errors)
        var parameters: [(String, String)] = [("page", "\(page)"), ("per_page", "\(perPage)")]
        parameters.append(("order_by", query.choice("order_by", of: orders, default: "relevant", errors: &errors)))
        parameters.append(("content_filter", query.choice("content_filter", of: contentFilters, default: "low", errors: &errors)))
        if let color = query.optionalChoice("color", of: colors, errors: &errors) { parameters.append(("color", color)) }
        if let orientation = query.optionalChoice("orientation", of: orientations, errors: &errors) {
            parameters.append(("orientation", orientation))
        }
        if let collections = query.collectionIDs(errors: &errors) { parameters.append(("collections", collections)) }
        try throwIfAny(errors)
        parameters.append(("query", text ?? ""))
        return UnsplashRequest(kind: .search, path: "search/photos", parameters: parameters, page: page, perPage: perPage)
    }

    /// `GET /v1/photos/random`: the pool it draws from (always the largest count Unsplash allows,
    /// so many answers share one upstream call) and how many photos to draw (`nil`: one object,
    /// not an array).
    static func random(_ query: QueryString) throws(Problem) -> (pool: UnsplashRequest, count: Int?) {
        var errors: [FieldError] = []
        var parameters: [(String, String)] = [("count", "\(maxPerPage)")]
        parameters.append(("content_filter", query.choice("content_filter", of: contentFilters, default: "low", errors: &errors)))
        if let text = query.searchText("query", required: false, errors: &errors) { parameters.append(("query", text)) }
        if let orientation = query.optionalChoice("orientation", of: orientations, errors: &errors) {
            parameters.append(("orientation", orientation))
        }
        if let collections = query.collectionIDs(errors: &errors) { parameters.append(("collections", collections)) }
        let count: Int? = query["count"] == nil ? nil : query.integer("count", default: 1, in: 1...maxPerPage, errors: &errors)
        try throwIfAny(errors)
        return (UnsplashRequest(kind: .randomPool, path: "photos/random", parameters: parameters), count)
    }

    private static func throwIfAny(_ errors: [FieldError]) throws(Problem) {
        if !errors.isEmpty { throw Problem.validation(errors) }
    }
}

/// A request's query string, parsed the way browsers and Unsplash's clients write it: `+` and
/// `%20` are spaces, and the first occurrence of a name wins.
struct QueryString: Sendable {
    private var values: [String: String] = [:]

    init(_ raw: String?) {
        for pair in (raw ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), !name.isEmpty, values[name] == nil else { continue }
            values[name] = parts.count > 1 ? (Self.decode(parts[1]) ?? "") : ""
        }
    }

    subscript(name: String) -> String? { values[name] }

    private static func decode(_ text: Substring) -> String? {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// `name=value&…`, values encoded so they survive any URL parser (RFC 3986 unreserved
    /// characters stay as they are).
    static func encode(_ parameters: [(name: String, value: String)]) -> String {
        parameters.map { "\($0.name)=\(escape($0.value))" }.joined(separator: "&")
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func escape(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    // MARK: Typed, validated parameters

    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>, errors: inout [FieldError]) -> Int {
        guard let raw = values[name] else { return defaultValue }
        guard let value = Int(raw.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            errors.append(FieldError(.parameter(name), "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)"))
            return defaultValue
        }
        return value
    }

    func choice(_ name: String, of choices: [String], default defaultValue: String, errors: inout [FieldError]) -> String {
        optionalChoice(name, of: choices, errors: &errors) ?? defaultValue
    }

    func optionalChoice(_ name: String, of choices: [String], errors: inout [FieldError]) -> String? {
        guard let raw = values[name] else { return nil }
        let value = raw.trimmingCharacters(in: .whitespaces).lowercased()
        guard choices.contains(value) else {
            errors.append(FieldError(.parameter(name), "\(name) must be one of \(choices.joined(separator: ", "))"))
            return nil
        }
        return value
    }

    /// Search words in normal form: trimmed, case-folded, runs of white space made one space.
    func searchText(_ name: String, required: Bool, errors: inout [FieldError]) -> String? {
        let words = (values[name] ?? "").lowercased().split(whereSeparator: \.isWhitespace)
        let text = words.joined(separator: " ")
        if text.isEmpty {
            if required { errors.append(FieldError(.parameter(name), "\(name) is required and may not be blank")) }
            return nil
        }
        if text.count > 200 {
            errors.append(FieldError(.parameter(name), "\(name) may be at most 200 characters"))
            return nil
        }
        return text
    }

    /// Comma-separated collection ids, sorted and without repeats; empty (`collections=`, what a
    /// client sends for an empty list) is no filter, as Unsplash takes it.
    func collectionIDs(errors: inout [FieldError]) -> String? {
        guard let raw = values["collections"] else { return nil }
        let ids = Set(raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        if ids.isEmpty, raw.allSatisfy({ $0 == "," || $0 == " " }) { return nil }
        guard !ids.isEmpty, ids.count <= 20, ids.allSatisfy(UnsplashPhotoID.isValid) else {
            errors.append(FieldError(.parameter("collections"), "collections must be up to 20 comma-separated collection ids"))
            return nil
        }
        return ids.sorted().joined(separator: ",")
    }
}
