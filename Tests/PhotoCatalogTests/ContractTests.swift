import Foundation
import TestSupport
import Testing
import Yams

@testable import PhotoCatalog

/// The catalog's answers against `Services/PhotoCatalog/openapi.yaml` and Unsplash's shapes
/// (Services/PhotoCatalog/openapi.yaml), online (a fake Unsplash) and offline (the fixture set).
/// `make contract SERVICE=photo-catalog` runs this suite alone.
@Suite("photo-catalog contract")
struct ContractTests {
    static func document() -> [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Services/PhotoCatalog/openapi.yaml")
        return (try? Yams.load(yaml: String(contentsOf: url, encoding: .utf8)) as? [String: Any]) ?? [:]
    }

    /// The `required` list of `components.schemas.<name>`.
    static func required(_ name: String) -> Set<String> {
        let schemas = (document()["components"] as? [String: Any])?["schemas"] as? [String: Any]
        return Set((schemas?[name] as? [String: Any])?["required"] as? [String] ?? [])
    }

    /// Checks a photo against the spec's basic photo object.
    static func expectPhoto(_ photo: [String: Any], full: Bool = false) {
        #expect(Set(photo.keys).isSuperset(of: required("Photo")), "\(photo.keys.sorted())")
        let urls = photo["urls"] as? [String: Any] ?? [:]
        #expect(Set(urls.keys).isSuperset(of: ["raw", "full", "regular", "small", "thumb"]))
        let links = photo["links"] as? [String: Any] ?? [:]
        #expect(Set(links.keys).isSuperset(of: ["self", "html", "download", "download_location"]))
        let user = photo["user"] as? [String: Any] ?? [:]
        #expect(user["name"] is String && (user["links"] as? [String: Any])?["html"] is String, "attribution is always passed through")
        #expect(DateParsing.rfc3339WithOffset(photo["created_at"] as? String ?? "") != nil, "\(photo["created_at"] ?? "")")
        if full {
            #expect(Set(photo.keys).isSuperset(of: ["downloads", "exif", "location", "tags"]))
        }
    }

    @Test func theDocumentDescribesEveryRouteTheServiceServes() async throws {
        let paths = try #require(Self.document()["paths"] as? [String: [String: Any]])
        #expect(Set(paths.keys) == ["/photos", "/photos/random", "/photos/{id}", "/photos/{id}/download", "/search/photos", "/fixtures/{file}"])
        let operations = paths.flatMap { path, methods in methods.keys.map { (path, $0) } }
        try await CatalogHarness.with(offline: true) { catalog in
            for (path, method) in operations {
                do {
                    let concrete =
                        path.replacingOccurrences(of: "{id}", with: "mate-aqua-01").replacingOccurrences(of: "{file}", with: "Aqua.jpg")
                        + (path == "/search/photos" ? "?query=water" : "")
                    let response = try await catalog.app.request(.init(method.uppercased())!, "/v1" + concrete)
                    #expect(response.status != 404 || path == "/photos/{id}/download", "\(method) \(path): \(response.status)")
                    #expect(response.status != 405 && response.status < 500, "\(method) \(path): \(response.status)")
                }
            }
        }
    }

    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await CatalogHarness.with { catalog in
            let report = try await Schemathesis(
                service: "PhotoCatalog",
                baseURL: catalog.app.baseURL + "/v1",
                headers: [("Authorization", "Bearer \(try catalog.token())")]
            ).run()
            #expect(report.passed, "\(report)")
        }
    }

    @Test func onlineAnswersHaveUnsplashShapes() async throws {
        try await CatalogHarness.with { catalog in
            let list = try await catalog.get("/v1/photos")
            let photos = try #require(try JSONSerialization.jsonObject(with: list.body) as? [[String: Any]])
            #expect(photos.count == 10)
            for photo in photos { Self.expectPhoto(photo) }
            let search = try await catalog.get("/v1/search/photos?query=dogs")
            let object = try search.json()
            #expect(Set(object.keys) == ["total", "total_pages", "results"])
            for photo in object["results"] as? [[String: Any]] ?? [] { Self.expectPhoto(photo) }
            Self.expectPhoto(try await catalog.get("/v1/photos/abc").json(), full: true)
            for response in [list, search] {
                #expect(response.headers["content-type"] == "application/json")
                #expect(response.headers["etag"]?.hasPrefix("\"") == true)
                #expect(response.headers["cache-status"]?.hasPrefix("photo-catalog; ") == true)
            }
        }
    }

    @Test func errorsAreProblemDocuments() async throws {
        try await CatalogHarness.with { catalog in
            catalog.unsplash.set(mode: .failing)
            for (path, status) in [("/v1/photos?per_page=0", 422), ("/v1/photos/bad%20id", 404), ("/v1/photos", 503), ("/v1/nowhere", 404)] {
                let response = try await catalog.get(path)
                #expect(response.status == status, "\(path)")
                #expect(response.headers["content-type"] == "application/problem+json", "\(path)")
                let problem = try response.json()
                #expect(Set(problem.keys).isSuperset(of: Self.required("Problem")), "\(path): \(problem)")
                #expect(problem["status"] as? Int == status)
            }
        }
    }
}

enum DateParsing {
    /// RFC 3339 with a numeric offset or `Z`, as Unsplash writes `created_at`.
    static func rfc3339WithOffset(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
