import Foundation
import TestSupport
import Testing

@testable import PhotoCatalog

/// Offline mode: no access key, the bundled photographs in Unsplash's shapes.
@Suite("photo-catalog offline fixtures")
struct FixtureTests {
    @Test func listsTheBundledPhotosNewestFirstWithPagination() async throws {
        try await CatalogHarness.with(offline: true) { catalog in
            let first = try await catalog.get("/v1/photos")
            #expect(first.status == 200)
            #expect(first.headers["x-total"] == "12")
            #expect(first.headers["link"]?.contains("<https://splash.test/v1/photos?page=2&per_page=10>; rel=\"next\"") == true, "\(first.headers)")
            #expect(first.headers["cache-status"] == "photo-catalog; hit; detail=fixtures")
            let photos = try #require(try JSONSerialization.jsonObject(with: first.body) as? [[String: Any]])
            #expect(photos.count == 10)
            for photo in photos { ContractTests.expectPhoto(photo) }
            let dates = photos.compactMap { ($0["created_at"] as? String).flatMap(DateParsing.rfc3339WithOffset) }
            #expect(dates == dates.sorted(by: >))
            let second = try JSONSerialization.jsonObject(with: try await catalog.get("/v1/photos?page=2").body) as? [[String: Any]]
            #expect(second?.count == 2)
            #expect(catalog.unsplash.callCount == 0)
        }
    }

    @Test func searchesTheWordsOfTheDescriptions() async throws {
        try await CatalogHarness.with(offline: true) { catalog in
            let flowers = try await catalog.get("/v1/search/photos?query=Flower")
            let object = try flowers.json()
            let results = try #require(object["results"] as? [[String: Any]])
            #expect((object["total"] as? Int ?? 0) >= 4)
            for photo in results {
                let tags = (photo["tags"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
                let text = "\(photo["description"] ?? "") \(photo["alt_description"] ?? "") \(tags.joined(separator: " "))".lowercased()
                #expect(text.contains("flower"), "\(text)")
            }
            // The README's example.
            let paged = try await catalog.get("/v1/search/photos?query=flower&per_page=2")
            #expect(paged.headers["x-total"] == "5")
            #expect(
                paged.headers["link"]
                    == "<https://splash.test/v1/search/photos?page=3&content_filter=low&order_by=relevant&per_page=2&query=flower>; rel=\"last\", "
                    + "<https://splash.test/v1/search/photos?page=2&content_filter=low&order_by=relevant&per_page=2&query=flower>; rel=\"next\""
            )
            let pagedBody = try paged.json()
            #expect(pagedBody["total_pages"] as? Int == 3)
            #expect((pagedBody["results"] as? [[String: Any]])?.first?["id"] as? String == "mate-garden-05")
            let both = try await catalog.get("/v1/search/photos?query=green+leaf").json()
            #expect((both["results"] as? [[String: Any]])?.first?["id"] as? String == "mate-blinds-02")
            let none = try await catalog.get("/v1/search/photos?query=submarine").json()
            #expect(none["total"] as? Int == 0)
            #expect((none["results"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func imageURLsPointAtTheCatalogsOwnRouteWhichServesTheJPEG() async throws {
        try await CatalogHarness.with(offline: true) { catalog in
            let photo = try await catalog.get("/v1/photos/mate-ladybird-07").json()
            ContractTests.expectPhoto(photo, full: true)
            let regular = try #require((photo["urls"] as? [String: Any])?["regular"] as? String)
            #expect(regular.hasPrefix("https://splash.test/v1/fixtures/LadyBird.jpg?"), "\(regular)")
            let path = String(regular.dropFirst("https://splash.test".count))
            let image = try await catalog.get(path)
            #expect(image.status == 200)
            #expect(image.headers["content-type"] == "image/jpeg")
            #expect(image.body.prefix(3) == Data([0xFF, 0xD8, 0xFF]))
            #expect(try await catalog.get(path, headers: [("If-None-Match", image.headers["etag"] ?? "")]).status == 304)
            for bad in ["/v1/fixtures/Nope.jpg", "/v1/fixtures/..%2Ffixtures.json", "/v1/fixtures/fixtures.json", "/v1/photos/nope"] {
                #expect(try await catalog.get(bad).status == 404, "\(bad)")
            }
        }
    }

    @Test func randomAndDownloadWorkOffline() async throws {
        try await CatalogHarness.with(offline: true) { catalog in
            let portraits = try await catalog.get("/v1/photos/random?count=3")
            #expect((try JSONSerialization.jsonObject(with: portraits.body) as? [Any])?.count == 3)
            let recorded = try await catalog.reportDownload("mate-aqua-01", bearer: try catalog.token())
            #expect(recorded.status == 202)
            #expect(try await catalog.count("downloads", where: "state = 'offline'") == 1)
            #expect(catalog.unsplash.callCount == 0)
        }
    }
}
