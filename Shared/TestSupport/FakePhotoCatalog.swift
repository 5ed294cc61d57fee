import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import NIOCore
import Synchronization

/// photo-catalog as edit-render and social see it, over real HTTP: `/v1/photos/{id}` answers with `urls`
/// pointing at this server's `/images/{file}` (real photos from the fixtures) — or, for ids
/// starting with `elsewhere`, at a host that is not allowed; those starting with `slow-` at an image
/// that takes 3 s to come (`slow-Aqua`); `/v1/photos/{id}/download` counts
/// reports; `/jwks.json` publishes the key test tokens are signed with.
package final class FakePhotoCatalog: Sendable {
    package let key = SigningKey.generate()
    private let images: [String: [UInt8]]
    private let state = Mutex<(server: TestServer?, reports: [String])>((nil, []))

    package init(images: [String: [UInt8]]) {
        self.images = images
    }

    package var port: Int { state.withLock { $0.server?.port ?? 0 } }
    package var baseURL: String { "http://127.0.0.1:\(port)" }
    package var reports: [String] { state.withLock { $0.reports } }

    package func start() async throws {
        let router = Router()
        router.get("jwks.json") { [key] _, _ -> Response in
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: [key.verificationKey.jwk]))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("v1/photos/:id") { [self] _, context -> Response in
            let id = context.parameters.get("id") ?? ""
            if id.hasPrefix("missing") { return Response(status: .notFound) }
            let slow = id.hasPrefix("slow-")
            let file = (slow ? id.dropFirst(5) : id[...]).split(separator: "-").first.map(String.init) ?? id
            let base = id.hasPrefix("elsewhere") ? "https://evil.example" : baseURL
            let urls = [
                "full": "\(base)/images/\(file).jpg?\(slow ? "slow" : "full")",
                "regular": "\(base)/images/\(file).jpg?\(slow ? "slow" : "regular")",
            ]
            let body = try JSONSerialization.data(
                withJSONObject: [
                    "id": id, "urls": urls, "width": 2560, "height": 1600, "description": "A test photo",
                    "links": ["html": "https://unsplash.com/photos/\(id)"],
                    "user": ["name": "Test Photographer", "username": "tester", "links": ["html": "https://unsplash.com/@tester"]],
                ] as [String: Any]
            )
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.post("v1/photos/:id/download") { [self] request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            let user = request.headers[HTTPField.Name("X-Splash-User-Id")!] ?? "?"
            state.withLock { $0.reports.append("\(id) \(user)") }
            return Response(status: .accepted)
        }
        router.get("images/:file") { [images] request, context -> Response in
            if request.uri.query == "slow" { try await Task.sleep(for: .seconds(3)) }
            guard let bytes = images[context.parameters.get("file") ?? ""] else { return Response(status: .notFound) }
            return Response(status: .ok, headers: [.contentType: "image/jpeg"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let server = try await TestServer.start(router, label: "fake-catalog")
        state.withLock { $0.server = server }
    }

    package func stop() async {
        await state.withLock { $0.server }?.stop()
    }
}
