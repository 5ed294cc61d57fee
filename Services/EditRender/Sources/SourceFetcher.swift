import AsyncHTTPClient
import Blobs
import CatalogClient
import Contracts
import Foundation
import Imaging
import Logging
import NIOCore
import NIOFoundationCompat
import NIOPosix

/// Why a source cannot be had. `permanent` failures make the edit fail with `reason`; the others
/// are retried (the catalog or Unsplash may be back in a moment).
enum SourceError: Error, Equatable {
    case permanent(reason: String)
    case unavailable(String)
}

/// The bytes an edit starts from, and what to keep of them.
struct FetchedSource: Sendable {
    var bytes: [UInt8]
    /// For an Unsplash photo, its `urls` from photo-catalog: the original is kept as this
    /// reference, never as bytes. `nil` for an upload, whose bytes are the kept original.
    var unsplashURLs: [String: String]?
}

/// The bytes an edit starts from: an upload from the blob store (kept as the original), or an
/// Unsplash photo through photo-catalog (kept as a reference, never as bytes).
struct SourceFetcher: Sendable {
    let blobs: any BlobStore
    let store: EditStore
    let http: HTTPClient
    let catalog: PhotoCatalogClient
    let allowedHosts: Set<String>
    let allowsPrivateHosts: Bool
    let maxBytes: Int
    let logger: Logger

    /// - Parameter large: the output is larger than 1080 px, so Unsplash's `full` size is fetched
    ///   rather than `regular` (1080 wide).
    func fetch(_ source: EditSource, user: UUID, large: Bool) async throws(SourceError) -> FetchedSource {
        switch source {
        case .upload(let id):
            let upload: EditStore.Upload?
            do { upload = try await store.upload(id, user: user) } catch { throw .unavailable("\(error)") }
            guard let upload, let key = BlobKey(mediaPath: upload.key) else { throw .permanent(reason: "The uploaded photo no longer exists.") }
            do {
                guard let bytes = try await blobs.get(key) else { throw SourceError.permanent(reason: "The uploaded photo no longer exists.") }
                return FetchedSource(bytes: bytes, unsplashURLs: nil)
            } catch let error as SourceError { throw error } catch { throw .unavailable("\(error)") }
        case .unsplashPhoto(let id):
            let urls = try await photoURLs(id)
            guard let chosen = (large ? urls["full"] : urls["regular"]) ?? urls["full"] ?? urls["regular"] else {
                throw .permanent(reason: "Unsplash gives no image for photo \(id).")
            }
            return FetchedSource(bytes: try await download(chosen), unsplashURLs: urls)
        }
    }

    /// The photo's `urls` from photo-catalog (its cache answers most of these).
    func photoURLs(_ id: String) async throws(SourceError) -> [String: String] {
        guard UnsplashPhotoID.isValid(id) else {
            throw .permanent(reason: "\(id) is not an Unsplash photo id.")
        }
        do throws(PhotoCatalogClient.LookupError) {
            return try await catalog.photo(id).urls
        } catch {
            switch error {
            case .notFound: throw .permanent(reason: "Unsplash has no photo \(id).")
            case .unavailable(let detail): throw .unavailable(detail)
            }
        }
    }

    /// Fetches an image URL on an allowed host: no redirects (the client follows none), at most
    /// `maxBytes`.
    func download(_ address: String) async throws(SourceError) -> [UInt8] {
        guard let url = URL(string: address), let host = url.host?.lowercased() else {
            throw .permanent(reason: "The photo's address is not a URL.")
        }
        guard allowedHosts.contains(host) else {
            throw .permanent(reason: "Photos are fetched only from \(allowedHosts.sorted().joined(separator: ", ")); \(host) is not one of them.")
        }
        guard url.scheme == "https" || (allowsPrivateHosts && url.scheme == "http") else {
            throw .permanent(reason: "Photos are fetched over HTTPS only.")
        }
        if !allowsPrivateHosts, let refusal = await HostAddress.refusal(for: host) {
            throw refusal
        }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(HTTPClientRequest(url: address), timeout: .seconds(30))
        } catch {
            throw .unavailable("\(host): \(error)")
        }
        guard response.status.code == 200 else {
            if (300..<400).contains(response.status.code) {
                throw .permanent(reason: "\(host) redirected the photo elsewhere; redirects are not followed.")
            }
            if response.status.code == 404 { throw .permanent(reason: "\(host) has no such photo.") }
            throw .unavailable("\(host) answered \(response.status.code)")
        }
        do {
            return Array(buffer: try await response.body.collect(upTo: maxBytes))
        } catch is NIOTooManyBytesError {
            throw .permanent(reason: "The photo is larger than \(maxBytes >> 20) MB.")
        } catch {
            throw .unavailable("\(host): \(error)")
        }
    }
}

/// Addresses a source must not be fetched from: loopback, private, link-local (cloud metadata),
/// unspecified — given as literals, as `localhost`, or as a name that resolves to one.
enum HostAddress {
    /// Why `host` may not be fetched from, or nil when every address it resolves to is public.
    /// Resolving catches what the literal check cannot: `2130706433` or `0x7f.1` (both 127.0.0.1
    /// to the C resolver) and names pointed at internal addresses. The HTTP client resolves again
    /// when it connects; the allow-list of hosts stays the first line of defence.
    static func refusal(for host: String) async -> SourceError? {
        if isPrivateOrLoopback(host) { return .permanent(reason: "\(host) is a private or loopback address.") }
        let addresses: [String]
        do {
            addresses = try await NIOThreadPool.singleton.runIfActive { try resolve(host) }
        } catch {
            return .unavailable("\(host) could not be resolved: \(error)")
        }
        if let inside = addresses.first(where: isPrivateOrLoopback) {
            return .permanent(reason: "\(host) resolves to a private or loopback address (\(inside)).")
        }
        return addresses.isEmpty ? .unavailable("\(host) resolves to no address") : nil
    }

    struct ResolutionFailure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { String(cString: gai_strerror(code)) }
    }

    /// Every address `host` resolves to, as numeric strings (blocking: call off the event loops).
    static func resolve(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else { throw ResolutionFailure(code: status) }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            var name = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &name, socklen_t(name.count), nil, 0, NI_NUMERICHOST) == 0 {
                addresses.append(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }

    static func isPrivateOrLoopback(_ host: String) -> Bool {
        let host = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        let octets = host.split(separator: ".").compactMap { UInt8($0) }
        if octets.count == 4 {
            switch (octets[0], octets[1]) {
            case (10, _), (127, _), (0, _), (169, 254), (192, 168): return true
            case (172, let second): return (16...31).contains(second)
            case (100, let second): return (64...127).contains(second)
            default: return false
            }
        }
        if host.contains(":") {
            let lowered = host.lowercased()
            return lowered == "::1" || lowered == "::" || lowered.hasPrefix("fc") || lowered.hasPrefix("fd") || lowered.hasPrefix("fe80")
                || lowered.hasPrefix("::ffff:")
        }
        return false
    }
}
