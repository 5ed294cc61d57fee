import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import NIOCore
import Synchronization
import TestSupport

/// A stand-in service behind the gateway, over a real socket: it publishes a key set as auth
/// does, and answers every other path by echoing what it received (method, path, headers, body
/// size), so a test sees exactly what the gateway forwarded.
final class FakeUpstream: Sendable {
    private let currentKey: Mutex<SigningKey>
    private let keySetFetches = Atomic<Int>(0)
    private let requests = Atomic<Int>(0)
    private let bodyBytes = Atomic<Int>(0)
    private let running = Mutex<TestServer?>(nil)

    init(key: SigningKey = .generate()) {
        self.currentKey = Mutex(key)
    }

    /// The key its key set publishes (and tokens are signed with).
    var key: SigningKey { currentKey.withLock { $0 } }

    /// Publishes a new key from now on, as auth does when it rotates its key.
    func rotateKey() -> SigningKey {
        let key = SigningKey.generate()
        currentKey.withLock { $0 = key }
        return key
    }

    var keySetFetchCount: Int { keySetFetches.load(ordering: .relaxed) }
    var requestCount: Int { requests.load(ordering: .relaxed) }
    /// Request body bytes received so far, counted as they arrive.
    var bodyBytesReceived: Int { bodyBytes.load(ordering: .relaxed) }
    var port: Int { running.withLock { $0!.port } }
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts serving on `port` (0: any free port).
    func start(port: Int = 0) async throws {
        let router = Router()
        router.get("auth/v1/.well-known/jwks.json") { [self] _, _ -> Response in
            keySetFetches.add(1, ordering: .relaxed)
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: [self.key.verificationKey.jwk]))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("v1/edits/slow") { _, _ -> String in
            try await Task.sleep(for: .seconds(3))
            return "late"
        }
        // Far later than any gateway timeout of the tests, however loaded the machine.
        router.get("v1/edits/stalled") { _, _ -> String in
            try await Task.sleep(for: .seconds(12))
            return "very late"
        }
        // `count` bytes of `FakeUpstream.pattern`, written in 64 KiB pieces.
        router.get("v1/media/bytes/:count") { _, context -> Response in
            let count = try context.parameters.require("count", as: Int.self)
            return Response(
                status: .ok,
                headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(contentLength: count) { writer in
                    var sent = 0
                    while sent < count {
                        let piece = min(64 << 10, count - sent)
                        let start = Self.patternBytes.index(Self.patternBytes.startIndex, offsetBy: sent % 251)
                        try await writer.write(ByteBuffer(bytes: Self.patternBytes[start..<start + piece]))
                        sent += piece
                    }
                    try await writer.finish(nil)
                }
            )
        }
        // What a GET of the same would declare, and no body.
        router.head("v1/media/bytes/:count") { _, context -> Response in
            let count = try context.parameters.require("count", as: Int.self)
            return Response(
                status: .ok,
                headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(contentLength: count) { writer in
                    try await writer.finish(nil)
                }
            )
        }
        // Announces `count` bytes, sends 1,000 and breaks off (the server then drops the connection).
        router.get("v1/media/broken/:count") { _, context -> Response in
            let count = try context.parameters.require("count", as: Int.self)
            return Response(
                status: .ok,
                body: ResponseBody(contentLength: count) { writer in
                    try await writer.write(ByteBuffer(repeating: 0x41, count: 1_000))
                    throw CancellationError()
                }
            )
        }
        router.add(middleware: EchoMiddleware(upstream: self))
        let server = try await TestServer.start(router, port: port, label: "fake-upstream")
        running.withLock { $0 = server }
    }

    /// Stops serving and waits until the port is closed.
    func stop() async {
        await running.withLock({ $0 })?.stop()
    }

    /// The byte at `offset` of a `/v1/media/bytes/:count` answer.
    static func pattern(_ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset % 251) }

    /// The pattern from offset 0 for 64 KiB + 251 bytes: any 64 KiB piece of an answer is a slice.
    static let patternBytes: [UInt8] = (0..<(64 << 10) + 251).map(pattern)

    /// The first `count` bytes of the pattern, to compare an answer with.
    static func patternData(_ count: Int) -> Data {
        var data = Data(capacity: count)
        while data.count < count {
            data.append(contentsOf: patternBytes.prefix(min(251 * 256, count - data.count)))
        }
        return data
    }

    /// Answers every path but the key set, the slow route and the media routes with what it
    /// received.
    struct EchoMiddleware: RouterMiddleware {
        let upstream: FakeUpstream

        func handle(
            _ request: Request,
            context: BasicRequestContext,
            next: (Request, BasicRequestContext) async throws -> Response
        ) async throws -> Response {
            if request.uri.path == "/auth/v1/.well-known/jwks.json" || request.uri.path == "/v1/edits/slow" || request.uri.path == "/v1/edits/stalled"
                || request.uri.path.hasPrefix("/v1/media/")
            {
                return try await next(request, context)
            }
            return try await upstream.echo(request)
        }
    }

    fileprivate func echo(_ request: Request) async throws -> Response {
        requests.add(1, ordering: .relaxed)
        var size = 0
        for try await chunk in request.body {
            size += chunk.readableBytes
            bodyBytes.add(chunk.readableBytes, ordering: .relaxed)
        }
        var headers: [String: String] = [:]
        for field in request.headers {
            headers[field.name.canonicalName, default: ""] += headers[field.name.canonicalName] == nil ? field.value : ", " + field.value
        }
        let echo: [String: Any] = ["method": request.method.rawValue, "uri": request.uri.description, "headers": headers, "bodySize": size]
        let body = try JSONSerialization.data(withJSONObject: echo)
        var responseHeaders: HTTPFields = [
            .contentType: "application/json", .connection: "X-Upstream-Private", HTTPField.Name("X-Upstream-Private")!: "secret",
        ]
        responseHeaders[HTTPField.Name("X-Upstream")!] = "fake"
        return Response(status: .ok, headers: responseHeaders, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
