import Blobs
import CatalogClient
import Contracts
import Foundation
import Imaging
import Logging
import PostgresNIO
import ResourceAPI
import ServiceKit

/// Which photos a user may like or collect, and how a photo is shown in their lists.
///
/// - `unsplash:<id>`: any Unsplash photo photo-catalog knows (its data is kept, for the lists,
///   the first time someone uses it);
/// - `edit:<uuid>`: a completed edit of the user's own, or any edit a post shows;
/// - `post:<uuid>`: any post's photo.
struct PhotoResolver: Sendable {
    let catalog: PhotoCatalogClient
    let mediaLinks: MediaLinks
    let storageLinks: StorageLinks
    /// How long the links in lists work (before rounding up to the link bucket).
    let mediaLifetime: Duration
    let logger: Logger

    static let notFound = Problem(
        status: .notFound,
        type: "photo-not-found",
        title: "Photo not found",
        detail: "No such photo, or not one you may use: an edit must be yours (or posted), a post must exist."
    )

    /// Checks `key` may be used by the user whose transaction `connection` is in.
    /// - Throws: 404 `photo-not-found`.
    func checkUsable(_ key: PhotoKey, on connection: PostgresConnection) async throws {
        switch key {
        case .unsplash(let id):
            let known = try await connection.query("SELECT 1 FROM unsplash_photos WHERE photo_id = \(id)", logger: logger).collect()
            guard known.isEmpty else { return }
            let photo: CatalogPhoto
            do throws(PhotoCatalogClient.LookupError) {
                photo = try await catalog.photo(id, timeout: .seconds(5))
            } catch {
                switch error {
                case .notFound: throw Self.notFound
                case .unavailable(let detail):
                    // The like stands; the photo's data is fetched when a list shows it.
                    logger.warning("photo-catalog could not describe a photo now", metadata: ["photo": "\(id)", "error": "\(detail)"])
                    return
                }
            }
            try await Self.keep(photo, on: connection, logger: logger)
        case .edit(let id):
            let rows = try await connection.query(
                """
                SELECT 1 FROM edits WHERE edit_id = \(id)
                UNION ALL SELECT 1 FROM posts WHERE photo_key = \(key.description) LIMIT 1
                """,
                logger: logger
            ).collect()
            guard !rows.isEmpty else { throw Self.notFound }
        case .post(let id):
            guard try await !connection.query("SELECT 1 FROM posts WHERE id = \(id)", logger: logger).collect().isEmpty else { throw Self.notFound }
        }
    }

    /// Unsplash's image hosts: a liked photo's URL on one of them, over https, is taken as it is.
    static let unsplashImageHosts: Set<String> = ["images.unsplash.com", "plus.unsplash.com"]

    /// Whether `url` is an image of Unsplash photo `id` as an app may keep it with a like: an https
    /// URL of Unsplash's image hosts, or one of the URLs photo-catalog gives for that photo (its
    /// offline fixtures' included).
    /// - Throws: 503 when photo-catalog cannot say just now.
    func isImageURL(_ url: String, of id: String) async throws -> Bool {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), let host = parts.host?.lowercased() else {
            return false
        }
        if scheme == "https", Self.unsplashImageHosts.contains(host) { return true }
        do throws(PhotoCatalogClient.LookupError) {
            return try await catalog.photo(id, timeout: .seconds(5)).urls.values.contains(url)
        } catch {
            switch error {
            case .notFound: return false
            case .unavailable(let detail):
                throw Problem(status: .serviceUnavailable, type: "catalog-unavailable", title: "Service Unavailable", detail: detail)
            }
        }
    }

    /// Keeps an Unsplash photo's data for the lists.
    static func keep(_ photo: CatalogPhoto, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO unsplash_photos (photo_id, photo) VALUES (\(photo.id), \(try JSONBody.text(photo))::jsonb)
            ON CONFLICT (photo_id) DO UPDATE SET photo = excluded.photo, fetched_at = now()
            """,
            logger: logger
        )
    }

    /// How each of `keys` is shown to the user whose transaction `connection` is in, in order.
    func shown(_ keys: [PhotoKey], on connection: PostgresConnection, now: Date = Date()) async throws -> [ShownPhoto] {
        let expires = storageLinks.expiry(lifetime: Int(mediaLifetime.components.seconds), now: now)
        var shown: [PhotoKey: ShownPhoto] = [:]
        var unsplash: [String] = []
        var edits: [UUID] = []
        var posts: [UUID] = []
        for key in keys {
            switch key {
            case .unsplash(let id): unsplash.append(id)
            case .edit(let id): edits.append(id)
            case .post(let id): posts.append(id)
            }
            shown[key] = ShownPhoto(key: key)
        }
        if !unsplash.isEmpty {
            let rows = try await connection.query(
                "SELECT photo_id, photo::text FROM unsplash_photos WHERE photo_id = ANY(\(unsplash))",
                logger: logger
            ).collect()
            var known: Set<String> = []
            for row in rows {
                let (id, json) = try row.decode((String, String).self)
                known.insert(id)
                shown[.unsplash(id)]?.unsplash = try? JSONDecoder().decode(CatalogPhoto.self, from: Data(json.utf8))
            }
            for id in unsplash where !known.contains(id) {
                // Liked while the catalog could not answer: ask again now.
                if let photo = try? await catalog.photo(id, timeout: .seconds(5)) {
                    try await Self.keep(photo, on: connection, logger: logger)
                    shown[.unsplash(id)]?.unsplash = photo
                }
            }
        }
        if !edits.isEmpty {
            // The user's own edits, through edit-render's media links.
            let rows = try await connection.query(
                "SELECT edit_id, user_id, format, width, height FROM edits WHERE edit_id = ANY(\(edits))",
                logger: logger
            ).collect()
            for row in rows {
                let (edit, owner, format, width, height) = try row.decode((UUID, UUID, String, Int, Int).self)
                let link = mediaLinks.sign(.edited(user: owner, edit: edit, format: format), expires: expires)
                shown[.edit(edit)]?.media = MediaLink(
                    url: link.url,
                    width: width,
                    height: height,
                    expiresAt: link.expiresAt,
                    thumbnails: Thumbnails(mediaLink: link.url)
                )
            }
        }
        // Posts' photos, and others' edits a post shows: the post's image.
        let postKeys =
            posts.map { PhotoKey.post($0).description } + edits.filter { shown[.edit($0)]?.media == nil }.map { PhotoKey.edit($0).description }
        if !postKeys.isEmpty {
            let rows = try await connection.query(
                """
                SELECT DISTINCT ON (p.photo_key) p.photo_key, p.unsplash_url, o.name, o.blob_key, p.media_width, p.media_height
                FROM posts p LEFT JOIN objects o ON o.id = p.object_id
                WHERE p.photo_key = ANY(\(postKeys)) ORDER BY p.photo_key, p.created_at
                """,
                logger: logger
            ).collect()
            for row in rows {
                let (keyText, unsplashURL, name, blob, width, height) = try row.decode((String, String?, String?, String?, Int, Int).self)
                guard let key = PhotoKey(keyText) else { continue }
                shown[key]?.media = media(unsplashURL: unsplashURL, object: (name, blob), width: width, height: height, expires: expires)
            }
        }
        return keys.map { shown[$0] ?? ShownPhoto(key: $0) }
    }

    /// A post's image and its thumbnails: the Unsplash URL and Unsplash's sizes of it, or signed
    /// links to its object (`name`, and its blob key, whose last segment is its version) and to
    /// sized copies of that version.
    func media(unsplashURL: String?, object: (name: String?, blob: String?), width: Int, height: Int, expires: Int) -> MediaLink? {
        if let unsplashURL {
            return MediaLink(url: unsplashURL, width: width, height: height, expiresAt: nil, thumbnails: Thumbnails(unsplash: unsplashURL))
        }
        guard let name = object.name, let path = ObjectPath(stored: name, bucket: .posts) else { return nil }
        let signed = storageLinks.sign(path, expires: expires)
        let version = object.blob.flatMap { $0.split(separator: "/").last }.map(String.init)
        let thumbnails = version.map { version in
            let sized = { (asked: TransformRequest) in
                storageLinks.signRender(path, version: version, asked, expires: expires).absolute(storageLinks.publicBase)
            }
            return Thumbnails(small: sized(.smallThumbnail), medium: sized(.mediumThumbnail))
        }
        return MediaLink(
            url: signed.absolute(storageLinks.publicBase),
            width: width,
            height: height,
            expiresAt: signed.expiresAt,
            thumbnails: thumbnails
        )
    }

    static func kind(_ key: PhotoKey) -> String {
        switch key {
        case .unsplash: "unsplash"
        case .edit: "edit"
        case .post: "post"
        }
    }
}
