import Foundation
import NIOCore
import ServiceKit

/// The offline photo set served when no Unsplash key is configured: real photographs bundled with
/// the service (`Fixtures/Photos`, attribution in `Fixtures/SOURCE.md`), described in
/// `Fixtures/fixtures.json`, answered in Unsplash's JSON shapes, with `urls` pointing at the
/// catalog's own `/v1/fixtures/{file}` route.
struct FixtureCatalog: Sendable {
    struct Photo: Sendable, Decodable {
        struct Photographer: Sendable, Decodable {
            var username: String
            var name: String
        }

        var id: String
        var file: String
        var width: Int
        var height: Int
        var color: String
        var created_at: String
        var description: String
        var alt_description: String
        var tags: [String]
        var photographer: Photographer

        /// Lower-cased words of the description, alt text and tags: what a search matches.
        var words: Set<String> {
            let text = ([description, alt_description] + tags).joined(separator: " ").lowercased()
            return Set(text.split { !$0.isLetter && !$0.isNumber }.map(String.init))
        }

        var orientation: String {
            if abs(width - height) * 10 < max(width, height) { return "squarish" }
            return width > height ? "landscape" : "portrait"
        }
    }

    private struct Manifest: Decodable {
        var photos: [Photo]
    }

    /// Newest first, as Unsplash lists them.
    let photos: [Photo]
    let directory: URL
    /// `PhotoCatalogConfiguration.publicBase`.
    private let publicBase: String

    static let attributionURL = "https://github.com/mate-desktop/mate-backgrounds"

    /// Reads the bundled manifest.
    /// - Throws: when the bundle lacks it or it does not parse (a packaging error).
    init(bundle: Bundle, publicBase: String) throws {
        guard let directory = bundle.url(forResource: "Fixtures", withExtension: nil) else {
            throw FixtureError.missing("Fixtures")
        }
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: directory.appendingPathComponent("fixtures.json")))
        self.photos = manifest.photos.sorted { $0.created_at > $1.created_at }
        self.directory = directory.appendingPathComponent("Photos")
        self.publicBase = publicBase
    }

    enum FixtureError: Error {
        case missing(String)
    }

    /// The file behind `/v1/fixtures/{name}`; `nil` for any name that is not one of the photos.
    func imageFile(named name: String) -> URL? {
        guard photos.contains(where: { $0.file == name }) else { return nil }
        return directory.appendingPathComponent(name)
    }

    // MARK: Answers

    /// Answers `request` from the fixture set, shaped like Unsplash's answer to it.
    func answer(_ request: UnsplashRequest) -> ServedAnswer {
        let parameters = Dictionary(request.parameters.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        let status: Int
        let object: Any
        var total: Int?
        switch request.kind {
        case .list:
            let page = pageOf(photos, request)
            (object, total, status) = (page.map { basic($0) }, photos.count, 200)
        case .photo:
            let id = request.photoID ?? ""
            if let photo = photos.first(where: { $0.id == id }) {
                (object, status) = (full(photo), 200)
            } else {
                (object, status) = (["errors": ["Couldn't find Photo"]], 404)
            }
        case .search:
            let matches = search(parameters)
            let perPage = request.perPage ?? 10
            let page = pageOf(matches, request)
            let pages = (matches.count + perPage - 1) / perPage
            (object, total, status) = (
                ["total": matches.count, "total_pages": pages, "results": page.map { basic($0) }] as [String: Any], matches.count, 200
            )
        case .randomPool:
            let pool = parameters["query"] == nil ? photos.filter { matchesFilters($0, parameters) } : search(parameters)
            (object, status) = (pool.map { basic($0) }, pool.isEmpty ? 404 : 200)
        }
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        let answer = CachedAnswer(status: status, body: ByteBuffer(bytes: body), total: total, storedAt: Date(), lifetime: .seconds(3_600))
        return ServedAnswer(answer: answer, cacheStatus: .fixtures)
    }

    private func pageOf(_ list: [Photo], _ request: UnsplashRequest) -> ArraySlice<Photo> {
        let perPage = request.perPage ?? 10
        let start = min(list.count, ((request.page ?? 1) - 1) * perPage)
        return list[start..<min(list.count, start + perPage)]
    }

    /// Photos whose words include every word of the query (a query word also matches a longer
    /// word it begins, so "flower" finds "flowers"), filtered by orientation, most matching words
    /// first for `relevant`, newest first for `latest`.
    private func search(_ parameters: [String: String]) -> [Photo] {
        let queryWords = (parameters["query"] ?? "").split { !$0.isLetter && !$0.isNumber }.map(String.init)
        guard !queryWords.isEmpty else { return [] }
        let scored: [(photo: Photo, score: Int)] = photos.compactMap { photo in
            guard matchesFilters(photo, parameters) else { return nil }
            let words = photo.words
            var score = 0
            for word in queryWords {
                if words.contains(word) { score += 2 } else if words.contains(where: { $0.hasPrefix(word) }) { score += 1 } else { return nil }
            }
            return (photo, score)
        }
        if parameters["order_by"] == "latest" { return scored.map(\.photo) }
        return scored.enumerated().sorted { ($0.element.score, -$0.offset) > ($1.element.score, -$1.offset) }.map(\.element.photo)
    }

    private func matchesFilters(_ photo: Photo, _ parameters: [String: String]) -> Bool {
        parameters["orientation"].map { $0 == photo.orientation } ?? true
    }

    // MARK: Unsplash's shapes

    private func basic(_ photo: Photo) -> [String: Any] {
        let raw = "\(publicBase)/v1/fixtures/\(photo.file)?ixid=\(photo.id)"
        let profile = "\(publicBase)/v1/fixtures/\(photo.file)?ixid=\(photo.id)&w=64&h=64&fit=crop"
        return [
            "id": photo.id,
            "created_at": photo.created_at,
            "updated_at": photo.created_at,
            "promoted_at": NSNull(),
            "width": photo.width,
            "height": photo.height,
            "color": photo.color,
            "blur_hash": NSNull(),
            "description": photo.description,
            "alt_description": photo.alt_description,
            "likes": 0,
            "liked_by_user": false,
            // Unsplash's search results carry tags too; every fixture answer does.
            "tags": photo.tags.map { ["title": $0] },
            "urls": [
                "raw": raw,
                "full": raw + "&fm=jpg&q=80",
                "regular": raw + "&w=1080&fit=max",
                "small": raw + "&w=400&fit=max",
                "thumb": raw + "&w=200&fit=max",
            ],
            "links": [
                "self": "\(publicBase)/v1/photos/\(photo.id)",
                "html": Self.attributionURL,
                "download": "\(publicBase)/v1/fixtures/\(photo.file)",
                "download_location": "\(publicBase)/v1/photos/\(photo.id)/download",
            ],
            "user": [
                "id": photo.photographer.username,
                "username": photo.photographer.username,
                "name": photo.photographer.name,
                "portfolio_url": NSNull(),
                "bio": "Photographs from Debian's mate-backgrounds, GPL-2.0-or-later.",
                "location": NSNull(),
                "total_likes": 0,
                "total_photos": photos.filter { $0.photographer.username == photo.photographer.username }.count,
                "total_collections": 0,
                "profile_image": ["small": profile, "medium": profile, "large": profile],
                "links": [
                    "self": Self.attributionURL,
                    "html": Self.attributionURL,
                    "photos": Self.attributionURL,
                    "likes": Self.attributionURL,
                    "portfolio": Self.attributionURL,
                ],
            ] as [String: Any],
        ]
    }

    private func full(_ photo: Photo) -> [String: Any] {
        var object = basic(photo)
        object["downloads"] = 0
        object["exif"] = [
            "make": NSNull(), "model": NSNull(), "name": NSNull(), "exposure_time": NSNull(), "aperture": NSNull(), "focal_length": NSNull(),
            "iso": NSNull(),
        ]
        object["location"] = ["city": NSNull(), "country": NSNull(), "position": ["latitude": NSNull(), "longitude": NSNull()]] as [String: Any]
        return object
    }
}
