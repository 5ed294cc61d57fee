import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import NIOCore
import Synchronization

/// A stand-in for api.unsplash.com over a real socket, answering in the spec's shapes with
/// Unsplash's headers (`X-Total`, `X-Per-Page`, `X-Ratelimit-*`). It counts the calls it gets, and
/// a test can make it slow, failing or rate-limiting (429, or 403 with the plain-text body).
/// It also publishes a key set, as auth does, so tests can sign access tokens for the catalog.
package final class FakeUnsplash: Sendable {
    package enum Mode: Sendable, Equatable {
        case normal
        case failing
        case rateLimited429
        case rateLimited403
    }

    private struct State {
        var mode: Mode = .normal
        var delay: Duration = .zero
        var quota = 5_000
        var remaining = 5_000
        package var calls: [String] = []
        package var downloads: [String] = []
        package var authorizations: Set<String> = []
    }

    package static let accessKey = "fake-access-key-0123456789abcdef"
    package let key = SigningKey.generate()
    private let state = Mutex(State())

    package init() {}
    private let running = Mutex<TestServer?>(nil)

    package var port: Int { running.withLock { $0!.port } }
    package var baseURL: String { "http://127.0.0.1:\(port)/" }

    // MARK: Control

    package func set(mode: Mode) { state.withLock { $0.mode = mode } }
    package func set(delay: Duration) { state.withLock { $0.delay = delay } }
    package func set(quota: Int, remaining: Int) {
        state.withLock {
            $0.quota = quota
            $0.remaining = remaining
        }
    }

    /// Upstream API calls so far (`/search/photos?…` and so on), key-set fetches not counted.
    package var calls: [String] { state.withLock { $0.calls } }
    package var callCount: Int { calls.count }
    package func calls(to prefix: String) -> Int { calls.filter { $0.hasPrefix(prefix) }.count }
    /// Photo ids whose download was reported.
    package var downloads: [String] { state.withLock { $0.downloads } }
    /// Every `Authorization` header an API call carried.
    package var authorizations: Set<String> { state.withLock { $0.authorizations } }

    // MARK: Serving

    package func start() async throws {
        let router = Router()
        router.get("jwks.json") { [self] _, _ -> Response in
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: [key.verificationKey.jwk]))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("photos") { [self] request, _ in
            try await answer(request) { query in
                let perPage = Int(query["per_page"] ?? "") ?? 10
                let page = Int(query["page"] ?? "") ?? 1
                return (Self.photos(count: perPage, seed: "list-\(page)"), 1_000, perPage)
            }
        }
        router.get("photos/random") { [self] request, _ in
            try await answer(request) { query in
                let count = Int(query["count"] ?? "") ?? 1
                return (Self.photos(count: count, seed: "random-\(UUID().uuidString.prefix(6))"), nil, nil)
            }
        }
        router.get("photos/:id") { [self] request, context in
            let id = context.parameters.get("id") ?? ""
            return try await answer(request) { _ in
                if id.hasPrefix("missing") { return nil }
                var photo = Self.photo(id: id, description: "A photo called \(id).")
                photo["downloads"] = 12
                photo["tags"] = [["title": "test"]]
                photo["exif"] =
                    [
                        "make": "Canon", "model": "EOS 5D", "name": "Canon, EOS 5D", "exposure_time": "1/250", "aperture": "4.0",
                        "focal_length": "50.0", "iso": 100,
                    ] as [String: Any]
                photo["location"] = ["city": "Montreal", "country": "Canada", "position": ["latitude": 45.5, "longitude": -73.6]] as [String: Any]
                return (photo, nil, nil)
            }
        }
        router.get("photos/:id/download") { [self] request, context in
            let id = context.parameters.get("id") ?? ""
            return try await answer(request) { [self] _ in
                state.withLock { $0.downloads.append(id) }
                return (["url": "https://images.fake/\(id)?download"], nil, nil)
            }
        }
        router.get("search/photos") { [self] request, _ in
            try await answer(request) { query in
                let perPage = Int(query["per_page"] ?? "") ?? 10
                let text = query["query"] ?? ""
                let results = Self.photos(count: perPage, seed: "search-\(text)-\(query["page"] ?? "1")", description: "A photo of \(text).")
                return (["total": 133, "total_pages": (133 + perPage - 1) / perPage, "results": results] as [String: Any], 133, perPage)
            }
        }
        let server = try await TestServer.start(router, label: "fake-unsplash")
        running.withLock { $0 = server }
    }

    package func stop() async {
        await running.withLock({ $0 })?.stop()
    }

    /// Checks the headers Unsplash requires, counts the call, applies the mode and the budget, and
    /// answers with `make`'s body (`nil`: 404).
    private func answer(_ request: Request, _ make: @Sendable ([String: String]) -> (body: Any, total: Int?, perPage: Int?)?) async throws -> Response
    {
        let (mode, delay, remaining, quota) = state.withLock { state in
            state.calls.append(request.uri.description)
            state.authorizations.insert(request.headers[.authorization] ?? "")
            if state.mode == .normal, state.remaining > 0 { state.remaining -= 1 }
            return (state.mode, state.delay, state.remaining, state.quota)
        }
        if delay > .zero { try await Task.sleep(for: delay) }
        var headers: HTTPFields = [HTTPField.Name("X-Ratelimit-Limit")!: String(quota), HTTPField.Name("X-Ratelimit-Remaining")!: String(remaining)]
        guard request.headers[.authorization] == "Client-ID \(Self.accessKey)", request.headers[HTTPField.Name("Accept-Version")!] == "v1" else {
            return Self.text(.unauthorized, "{\"errors\":[\"OAuth error: The access token is invalid\"]}", headers)
        }
        switch mode {
        case .failing:
            return Self.text(.internalServerError, "<html>upstream exploded</html>", headers)
        case .rateLimited429:
            headers[HTTPField.Name("X-Ratelimit-Remaining")!] = "0"
            return Self.text(.tooManyRequests, "Rate Limit Exceeded", headers)
        case .rateLimited403:
            headers[HTTPField.Name("X-Ratelimit-Remaining")!] = "0"
            return Self.text(.forbidden, "Rate Limit Exceeded", headers)
        case .normal:
            break
        }
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { query[String(name)] = String(value).removingPercentEncoding ?? String(value) }
        guard let made = make(query) else {
            headers[.contentType] = "application/json"
            return Self.text(.notFound, "{\"errors\":[\"Couldn't find Photo\"]}", headers)
        }
        if let total = made.total { headers[HTTPField.Name("X-Total")!] = String(total) }
        if let perPage = made.perPage { headers[HTTPField.Name("X-Per-Page")!] = String(perPage) }
        headers[.contentType] = "application/json"
        let json = String(decoding: try JSONSerialization.data(withJSONObject: made.body, options: [.withoutEscapingSlashes]), as: UTF8.self)
        let body = Data(json.replacingOccurrences(of: "DOWNLOAD_BASE", with: "http://127.0.0.1:\(port)").utf8)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    private static func text(_ status: HTTPResponse.Status, _ text: String, _ headers: HTTPFields) -> Response {
        var headers = headers
        if headers[.contentType] == nil { headers[.contentType] = "text/plain" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: Photos in Unsplash's shape

    package static func photos(count: Int, seed: String, description: String? = nil) -> [[String: Any]] {
        (0..<count).map { index in
            photo(id: "\(seed.filter { $0.isLetter || $0.isNumber }.prefix(20))\(index)", description: description ?? "Photo \(index) of \(seed).")
        }
    }

    package static func photo(id: String, description: String) -> [String: Any] {
        let raw = "https://images.unsplash.com/photo-\(id)?ixid=fake"
        return [
            "id": id, "created_at": "2016-05-03T11:00:28-04:00", "updated_at": "2016-07-10T11:00:01-05:00", "promoted_at": NSNull(),
            "width": 5245, "height": 3497, "color": "#60544D", "blur_hash": "LoC%a7IoIVxZ_NM|M{s:%hRjWAo0",
            "description": description, "alt_description": NSNull(), "likes": 12, "liked_by_user": false,
            "urls": [
                "raw": raw, "full": raw + "&fm=jpg&q=80", "regular": raw + "&w=1080&fit=max", "small": raw + "&w=400&fit=max",
                "thumb": raw + "&w=200&fit=max",
            ],
            "links": [
                "self": "https://api.unsplash.com/photos/\(id)", "html": "https://unsplash.com/photos/\(id)",
                "download": "https://unsplash.com/photos/\(id)/download",
                // Points back at this fake, as Unsplash's points at its own API host.
                "download_location": "DOWNLOAD_BASE/photos/\(id)/download?ixid=fake",
            ],
            "user": [
                "id": "pXhwzz1JtQU", "username": "poorkane", "name": "Gilbert Kane", "portfolio_url": NSNull(), "bio": NSNull(),
                "location": NSNull(), "total_likes": 5, "total_photos": 74, "total_collections": 52,
                "profile_image": [
                    "small": "https://images.unsplash.com/profile-s", "medium": "https://images.unsplash.com/profile-m",
                    "large": "https://images.unsplash.com/profile-l",
                ],
                "links": [
                    "self": "https://api.unsplash.com/users/poorkane", "html": "https://unsplash.com/@poorkane", "photos": "", "likes": "",
                    "portfolio": "",
                ],
            ] as [String: Any],
        ]
    }
}
