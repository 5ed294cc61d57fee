import AsyncHTTPClient
import Foundation
import LocalStack
import NIOCore
import NIOHTTP1
import TestSupport

// Storage's resumable uploads (`make bench-uploads`): a 25 MB photo (the 16 MB painting of
// `mate-backgrounds`, with bytes after its end-of-image marker up to `--megabytes`, as some cameras
// append a trailer: stored as sent either way) uploaded to a release `social` on loopback as one
// plain upload, and as a TUS upload in 6 MiB chunks (creation, then a PATCH per chunk),
// alternating, `--rounds` times each; the goal is the TUS upload within 1.2× the plain one's time.
let rounds = BenchmarkArguments.integer("--rounds", default: 7)
let megabytes = BenchmarkArguments.integer("--megabytes", default: 25)
let chunk = 6 << 20

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

let original = Array(try Data(contentsOf: LargePainting.url))
let painting = original + (0..<max(0, megabytes * 1_000_000 - original.count)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
let social = try await BenchmarkSocial.start("uploads-bench")
let user = UUID()
let token = try social.token(user)

/// Sends one request and returns its status and headers (the body read and dropped).
func send(_ method: HTTPMethod, _ path: String, headers: [(String, String)], body: ArraySlice<UInt8>? = nil) async throws -> HTTPClientResponse {
    var request = HTTPClientRequest(url: social.process.baseURL + path)
    request.method = method
    request.headers.add(name: "Authorization", value: "Bearer \(token)")
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
    _ = try await response.body.collect(upTo: 1 << 20)
    return response
}

func plain(_ round: Int) async throws -> Double {
    let started = ContinuousClock.now
    let response = try await send(
        .POST,
        "/storage/v1/object/posts/\(user.uuidString)/plain-\(round).jpg",
        headers: [("Content-Type", "image/jpeg")],
        body: painting[...]
    )
    precondition(response.status == .ok, "plain upload: \(response.status)")
    return started.duration(to: .now).seconds
}

/// The steps of the last TUS upload: creation, then each chunk (the last makes the object), in ms.
nonisolated(unsafe) var steps: [Double] = []

func resumable(_ round: Int) async throws -> Double {
    let started = ContinuousClock.now
    var marks: [Double] = []
    var mark = ContinuousClock.now
    let name = Data("\(user.uuidString)/tus-\(round).jpg".utf8).base64EncodedString()
    let created = try await send(
        .POST,
        "/storage/v1/upload/resumable",
        headers: [
            ("Tus-Resumable", "1.0.0"), ("Upload-Length", String(painting.count)),
            ("Upload-Metadata", "bucketName \(Data("posts".utf8).base64EncodedString()),objectName \(name)"),
        ]
    )
    precondition(created.status == .created, "creation: \(created.status)")
    marks.append(mark.duration(to: .now).seconds * 1000)
    mark = .now
    let location = created.headers.first(name: "location")!
    for offset in stride(from: 0, to: painting.count, by: chunk) {
        let response = try await send(
            .PATCH,
            location,
            headers: [("Tus-Resumable", "1.0.0"), ("Upload-Offset", String(offset)), ("Content-Type", "application/offset+octet-stream")],
            body: painting[offset..<min(offset + chunk, painting.count)]
        )
        precondition(response.status == .noContent, "chunk at \(offset): \(response.status)")
        marks.append(mark.duration(to: .now).seconds * 1000)
        mark = .now
    }
    steps = marks
    return started.duration(to: .now).seconds
}

_ = try await plain(0)
_ = try await resumable(0)
var times: (plain: [Double], tus: [Double]) = ([], [])
for round in 1...rounds {
    times.plain.append(try await plain(round))
    times.tus.append(try await resumable(round))
}
let medians = (plain: times.plain.sorted()[rounds / 2], tus: times.tus.sorted()[rounds / 2])
print("a \(painting.count / 1024) KB JPEG to social on loopback, \(rounds) rounds alternating (seconds):")
print("  plain upload: \(times.plain.map { format($0 * 1000, 0) }.joined(separator: ", ")) ms")
print("  TUS, \(chunk >> 20) MiB chunks: \(times.tus.map { format($0 * 1000, 0) }.joined(separator: ", ")) ms")
print("  the last TUS upload: creation \(format(steps[0])) ms, chunks \(steps.dropFirst().map { format($0) }.joined(separator: ", ")) ms")
print(
    "  medians: plain \(format(medians.plain * 1000, 0)) ms, TUS \(format(medians.tus * 1000, 0)) ms → \(format(medians.tus / medians.plain, 2))× (goal ≤ 1.2×)"
)
await social.stop()
