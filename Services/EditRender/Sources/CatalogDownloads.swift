import AsyncHTTPClient
import Foundation
import Logging

/// Tells photo-catalog that a user used an Unsplash photo (Unsplash's download tracking): the
/// catalog records it once per user, photo and day and calls Unsplash in the background.
struct CatalogDownloads: Sendable {
    let http: HTTPClient
    let catalogURL: URL
    let serviceToken: String?
    let logger: Logger

    /// Best effort: a failure is logged, never fails the edit (the catalog's own queue retries
    /// once it has the report).
    func report(photo: String, user: UUID) async {
        guard let serviceToken else {
            logger.warning("No CATALOG_SERVICE_TOKEN: the use of an Unsplash photo is not reported", metadata: ["photo": "\(photo)"])
            return
        }
        var request = HTTPClientRequest(url: catalogURL.appendingPathComponent("v1/photos/\(photo)/download").absoluteString)
        request.method = .POST
        request.headers.add(name: "X-Splash-Service-Token", value: serviceToken)
        request.headers.add(name: "X-Splash-User-Id", value: user.lowercased)
        do {
            let response = try await http.execute(request, timeout: .seconds(10))
            if response.status.code != 202 {
                logger.warning("photo-catalog did not take the download report", metadata: ["photo": "\(photo)", "status": "\(response.status.code)"])
            }
        } catch {
            logger.warning("photo-catalog could not be told of a download", metadata: ["photo": "\(photo)", "error": "\(error)"])
        }
    }
}
