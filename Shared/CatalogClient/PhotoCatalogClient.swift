import AsyncHTTPClient
import Contracts
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat

/// An Unsplash photo as other services keep it: its id, size, image URLs and what its attribution
/// needs (Unsplash's rule: the photographer's name and links travel with the photo).
package struct CatalogPhoto: Codable, Sendable, Equatable {
    package struct Links: Codable, Sendable, Equatable {
        package var html: String?
    }

    package struct Photographer: Codable, Sendable, Equatable {
        package var name: String?
        package var username: String?
        package var links: Links?
    }

    package var id: String
    package var width: Int?
    package var height: Int?
    package var description: String?
    package var altDescription: String?
    package var urls: [String: String]
    package var links: Links?
    package var user: Photographer?

    private enum CodingKeys: String, CodingKey {
        case id, width, height, description
        case altDescription = "alt_description"
        case urls, links, user
    }
}

/// photo-catalog as the other services reach it, over HTTP: a photo by id (answered from the
/// catalog's cache, shared by every service), and reports of a user's use of a photo (Unsplash's
/// download tracking), made with the service token.
package struct PhotoCatalogClient: Sendable {
    package enum LookupError: Error, Equatable {
        /// Unsplash has no such photo (or the id is not one).
        case notFound
        /// The catalog could not answer just now.
        case unavailable(String)
    }

    let http: HTTPClient
    let baseURL: URL
    let serviceToken: String?
    let logger: Logger

    /// - Parameter serviceToken: photo-catalog's `CATALOG_SERVICE_TOKEN`; without it uses are not
    ///   reported (with a warning each time).
    package init(http: HTTPClient, baseURL: URL, serviceToken: String?, logger: Logger) {
        self.http = http
        self.baseURL = baseURL
        self.serviceToken = serviceToken
        self.logger = logger
    }

    /// The photo `id` as photo-catalog serves it.
    package func photo(_ id: String, timeout: TimeAmount = .seconds(15)) async throws(LookupError) -> CatalogPhoto {
        guard UnsplashPhotoID.isValid(id) else { throw .notFound }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(
                HTTPClientRequest(url: baseURL.appendingPathComponent("v1/photos/\(id)").absoluteString),
                timeout: timeout
            )
        } catch {
            throw .unavailable("photo-catalog: \(error)")
        }
        switch response.status.code {
        case 200: break
        case 404: throw .notFound
        default: throw .unavailable("photo-catalog answered \(response.status.code)")
        }
        do {
            let body = try await response.body.collect(upTo: 1 << 20)
            return try JSONDecoder().decode(CatalogPhoto.self, from: body)
        } catch {
            throw .unavailable("photo-catalog's answer could not be read: \(error)")
        }
    }

    /// Tells photo-catalog that `user` used `photo`: the catalog records it once per user, photo
    /// and day and calls Unsplash in the background. Best effort: a failure is logged, never
    /// thrown (the catalog's own queue retries once it has the report).
    package func reportUse(photo: String, user: UUID) async {
        guard let serviceToken else {
            logger.warning("No CATALOG_SERVICE_TOKEN: the use of an Unsplash photo is not reported", metadata: ["photo": "\(photo)"])
            return
        }
        var request = HTTPClientRequest(url: baseURL.appendingPathComponent("v1/photos/\(photo)/download").absoluteString)
        request.method = .POST
        request.headers.add(name: "X-Splash-Service-Token", value: serviceToken)
        request.headers.add(name: "X-Splash-User-Id", value: user.uuidString.lowercased())
        do {
            let response = try await http.execute(request, timeout: .seconds(10))
            if response.status.code != 202 {
                logger.warning(
                    "photo-catalog did not take the download report",
                    metadata: ["photo": "\(photo)", "status": "\(response.status.code)"]
                )
            }
        } catch {
            logger.warning("photo-catalog could not be told of a download", metadata: ["photo": "\(photo)", "error": "\(error)"])
        }
    }
}
