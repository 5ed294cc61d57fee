import AsyncHTTPClient
import Foundation
import LocalStack
import NIOCore
import NIOHTTP1
import S3Blobs
import TestSupport
import Testing

/// edit-render as it runs on several hosts: two API replicas and two render workers, each its own
/// process, sharing one S3 bucket (moto) and one broker, no folder in common.
@Suite("Replicas sharing one S3 store") struct SharedStoreTests {
    static let photoName = "FreshFlower"

    static func call(
        _ replica: ServiceProcess,
        _ token: String,
        _ method: HTTPMethod,
        _ path: String,
        headers: [(String, String)] = [],
        body: [UInt8]? = nil
    ) async throws -> (status: Int, body: [UInt8], type: String?) {
        var request = HTTPClientRequest(url: replica.baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return (
            Int(response.status.code), Array(buffer: try await response.body.collect(upTo: 32 << 20)), response.headers.first(name: "content-type")
        )
    }

    static func json(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]) ?? [:]
    }

    /// A media link's path and query, asked of a replica (links name the public URL).
    static func local(_ url: String) -> String {
        String(url.dropFirst("https://splash.test".count))
    }

    @Test func anEditMadeThroughOneReplicaIsRenderedByAWorkerAndServedByTheOther() async throws {
        try await WholeStackTurns.take {
            let s3 = try await MotoServer()
            defer { s3.stop() }
            let bucket = "render-\(UUID().uuidString.prefix(8).lowercased())"
            let store = try await s3.store(bucket: bucket)
            let onS3 = s3.blobSettings(bucket: bucket)
            do {
                try await RenderHarness.with(onS3.merging(["RENDER_ROLE": "api"]) { _, new in new }) { render in
                    func process(_ role: String) async throws -> ServiceProcess {
                        try await ServiceProcess(
                            "edit-render",
                            environment: render.environment.merging(["RENDER_ROLE": role, "RENDER_WORKERS": "1"]) { _, new in new }
                        )
                    }
                    async let a = process("api")
                    async let b = process("api")
                    async let first = process("worker")
                    async let second = process("worker")
                    let (replicaA, replicaB, workers) = try await (a, b, [first, second])
                    let processes = [("API replica A", replicaA), ("API replica B", replicaB), ("worker 1", workers[0]), ("worker 2", workers[1])]
                    defer { Task { for (_, process) in processes { await process.stop() } } }
                    do {
                        try await Self.editAndUpload(through: replicaA, replicaB, render: render, store: store)
                    } catch {
                        // Which process was gone, and what it said last, when a call failed.
                        let states = processes.map { name, process in
                            let ending = process.output.text.split(separator: "\n").suffix(15).joined(separator: "\n")
                            return "\(name) on port \(process.port): \(process.exitStatus.map { "exited with \($0)" } ?? "running")\n\(ending)"
                        }
                        Issue.record("\(error)\nmoto on port \(s3.port): \(s3.isRunning ? "running" : "gone")\n\(states.joined(separator: "\n"))")
                    }
                }
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// An edit through A that B reports done and serves; an upload through B that A serves; both
    /// blobs in the bucket and none in the harness's folder.
    static func editAndUpload(through replicaA: ServiceProcess, _ replicaB: ServiceProcess, render: RenderHarness, store: S3BlobStore) async throws {
        let user = UUID()
        let token = try render.token(user: user)
        // An edit through A; B reports it done and serves its image.
        let created = try await Self.call(
            replicaA,
            token,
            .POST,
            "/v1/edits",
            headers: [("Idempotency-Key", UUID().uuidString), ("Content-Type", "application/json")],
            body: Array(#"{"source":{"unsplashPhotoId":"FreshFlower-1"},"filters":[{"name":"sepia"}],"output":{"longestEdge":480}}"#.utf8)
        )
        #expect(created.status == 202, "\(String(decoding: created.body, as: UTF8.self))")
        let id = try #require(Self.json(created.body)["id"] as? String)
        var edit: [String: Any] = [:]
        // Generous: two workers joining their group on a loaded machine have taken over a minute.
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline, edit["status"] as? String != "completed" {
            try await Task.sleep(for: .milliseconds(200))
            edit = Self.json(try await Self.call(replicaB, token, .GET, "/v1/edits/\(id)").body)
        }
        #expect(edit["status"] as? String == "completed", "\(edit)")
        let result = try #require(edit["result"] as? [String: Any])
        let media = try await Self.call(replicaB, token, .GET, Self.local(try #require(result["url"] as? String)))
        #expect(
            media.status == 200 && media.type == "image/jpeg" && media.body.starts(with: [0xFF, 0xD8]),
            "\(media.status) \(media.type ?? "")"
        )

        // An upload through B; A serves it.
        let uploaded = try await Self.call(
            replicaB,
            token,
            .POST,
            "/v1/uploads",
            headers: [("Content-Type", "image/jpeg")],
            body: try RenderHarness.photo(Self.photoName)
        )
        #expect(uploaded.status == 201, "\(String(decoding: uploaded.body, as: UTF8.self))")
        let original = try await Self.call(replicaA, token, .GET, Self.local(try #require(Self.json(uploaded.body)["url"] as? String)))
        let photo = try RenderHarness.photo(Self.photoName)
        #expect(original.status == 200 && original.body == photo)

        // Both blobs are in the bucket, none in the folder the harness would have used.
        let keys = try await store.list(prefix: "\(user.uuidString.lowercased())/").map(\.key)
        #expect(keys.contains { $0.hasSuffix("/edited.jpg") } && keys.contains { $0.contains("/uploads/") }, "\(keys)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: render.blobs.path))?.isEmpty ?? true)
    }
}
