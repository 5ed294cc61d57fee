import AsyncHTTPClient
import Foundation
import Imaging
import LocalStack
import NIOCore
import TestSupport

// Storage's thumbnails (`make bench-thumbnails`), in one run with their baselines:
//  1. cold: a batch of 200 1080-px JPEGs (the size a post's photo is stored at) → 200×200 WebP
//     tiles, one render per core, through the transform the render endpoint runs — against
//     Pillow's best way (deploy/bench/pillow_thumbnails.py, one process per core) and against
//     `vipsthumbnail` (one process per core over the same files);
//  2. the bytes a phone downloads to draw a feed page's 20 tiles: the 20 posts' 1080-px photos
//     (what the feed's `media` is) against their `small` thumbnails, WebP and AVIF;
//  3. warm: a kept variant through the gateway (release `social` and `gateway`) at a fixed 200
//     requests/s for `--seconds`, the latency of each, against `/healthz` through the same gateway
//     at the same rate.
let rounds = BenchmarkArguments.integer("--rounds", default: 3)
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
let cores = ProcessInfo.processInfo.activeProcessorCount
let fixtures = URL(fileURLWithPath: "Tests/ImagingTests/Fixtures/photos")

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// Runs `command` and returns what it printed; stops the benchmark if it fails.
func run(_ command: String, _ arguments: [String]) async throws -> String {
    try await ProcessCommand(URL(fileURLWithPath: "/usr/bin/env"), [command] + arguments).runToCompletion()
}

/// Renders the batch's 200 files as `transform`, each read from disk, one render per thread of
/// `renderer`; returns the bytes rendered.
func renderAll(in folder: URL, as transform: ImageTransform, with renderer: Renderer) async throws -> Int {
    let threads = renderer.threads
    return try await withThrowingTaskGroup(of: Int.self) { group in
        for worker in 0..<threads {
            group.addTask {
                var bytes = 0
                for index in stride(from: worker, to: 200, by: threads) {
                    let source = Array(try Data(contentsOf: folder.appendingPathComponent(String(format: "%03d.jpg", index))))
                    bytes += try await renderer.transform(source, transform).bytes.count
                }
                return bytes
            }
        }
        return try await group.reduce(0, +)
    }
}

// The batch: every fixture photo at 1080 px, at several qualities and crops, 200 files in all.
let batch = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnail-batch-\(UUID().uuidString.prefix(8))")
try FileManager.default.createDirectory(at: batch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: batch) }
let photos = try FileManager.default.contentsOfDirectory(atPath: fixtures.path).filter { $0.hasSuffix(".jpg") }.sorted()
var files: [[UInt8]] = []
for index in 0..<200 {
    let source = Array(try Data(contentsOf: fixtures.appendingPathComponent(photos[index % photos.count])))
    let variant = ImageTransform(width: 1080 - (index / photos.count) % 8 * 20, quality: 80 + index % 12, format: .jpeg)
    let bytes = try RenderPipeline.transform(source, variant).bytes
    try Data(bytes).write(to: batch.appendingPathComponent(String(format: "%03d.jpg", index)))
    files.append(bytes)
}
let batchBytes = files.reduce(0) { $0 + $1.count }
print("batch: 200 JPEGs of 1060–1080 px from \(photos.count) photos, \(batchBytes / 1024) KB in all; \(cores) cores; \(rounds) rounds")

let tile = ImageTransform(width: 200, height: 200, resize: .cover, quality: 80, format: .webp)
let renderer = try Renderer(threads: cores)
var ratios: [(pillow: Double, vips: Double)] = []
var tileBytes = 0
for round in 1...rounds {
    // Splash: each file read from disk and rendered, one render per core.
    let started = ContinuousClock.now
    tileBytes = try await renderAll(in: batch, as: tile, with: renderer)
    let splashSeconds = started.duration(to: .now).seconds

    let pillow =
        try JSONSerialization.jsonObject(
            with: Data(try await run("python3", ["deploy/bench/pillow_thumbnails.py", "--folder", batch.path, "--processes", "\(cores)"]).utf8)
        ) as! [String: Any]
    let pillowSeconds = pillow["seconds"] as! Double

    let output = batch.appendingPathComponent("vips")
    try? FileManager.default.removeItem(at: output)
    try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
    let vipsStarted = ContinuousClock.now
    _ = try await run(
        "sh",
        [
            "-c",
            "ls \(batch.path)/*.jpg | xargs -P \(cores) -n 25 vipsthumbnail --size 200x200 --smartcrop centre -o '\(output.path)/%s.webp[Q=80,strip]'",
        ]
    )
    let vipsSeconds = vipsStarted.duration(to: .now).seconds

    let ratio = (pillow: pillowSeconds / splashSeconds, vips: splashSeconds / vipsSeconds)
    ratios.append(ratio)
    print(
        "round \(round): Splash \(format(200 / splashSeconds)) files/s (\(format(splashSeconds, 2)) s)   Pillow \(pillow["pillow"] as! String) \(format(200 / pillowSeconds)) files/s (\(format(pillowSeconds, 2)) s)   vipsthumbnail \(format(vipsSeconds, 2)) s   → Splash/Pillow throughput \(format(ratio.pillow, 2))×, Splash/vipsthumbnail time \(format(ratio.vips, 2))×"
    )
}
print("goal: throughput ≥ 2.5× Pillow's; time ≤ 1.3× vipsthumbnail's")
// Where Pillow's tile spends its time, on one core over the same files, and its WebP save at each effort.
print(
    "Pillow's steps, ms per file on one core: \(try await run("python3", ["deploy/bench/pillow_thumbnails.py", "--folder", batch.path, "--steps"]))"
)

// A feed page: 20 posts' photos as the feed links them — each fixture photo posted, so stored as
// a post stores it (PostStore: 1080 px JPEG, the best quality within the 1 MB budget) — against
// their small thumbnails as WebP, and as AVIF for a client that takes it (STORAGE_RENDER_AVIF).
var page = 0
var tiles = (webp: 0, avif: 0)
for index in 0..<20 {
    let original = Array(try Data(contentsOf: fixtures.appendingPathComponent(photos[index % photos.count])))
    let posted = try RenderPipeline.render(original, filters: .none, output: OutputRules(format: .jpeg, longestEdge: 1080)).bytes
    page += posted.count
    tiles.webp += try await renderer.transform(posted, tile).bytes.count
    var avif = tile
    avif.format = .avif
    tiles.avif += try await renderer.transform(posted, avif).bytes.count
}
print(
    "a feed page's 20 tiles: \(page / 1024) KB as the posts' 1080-px photos; as thumbnails \(tiles.webp / 1024) KB WebP → \(format(Double(page) / Double(tiles.webp)))× fewer bytes, \(tiles.avif / 1024) KB AVIF → \(format(Double(page) / Double(tiles.avif)))× (goal ≥ 20×)"
)
try await renderer.shutdown()

// MARK: 3. A kept variant through the gateway, at a fixed rate

let social = try await BenchmarkSocial.start("thumbnail-bench")
let issuer = BenchmarkSocial.issuer
let gateway = try await ServiceProcess(
    "gateway",
    environment: [
        "KAFKA_BROKERS": social.kafkaBrokers, "KAFKA_CREATE_TOPICS": "false", "LOG_LEVEL": "error",
        "GATEWAY_AUTH_URL": social.catalog.baseURL, "GATEWAY_JWKS_URL": social.catalog.baseURL + "/jwks.json", "GATEWAY_JWT_ISSUER": issuer,
        "GATEWAY_SOCIAL_URL": social.process.baseURL,
        "GATEWAY_RATE_LIMIT_STORAGE": "100000000/1m",
    ]
)
let owner = UUID()
let token = try social.token(owner)

func get(_ url: String, headers: [(String, String)] = []) async throws -> (status: Int, bytes: Int) {
    var request = HTTPClientRequest(url: url)
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
    return (Int(response.status.code), try await response.body.collect(upTo: 1 << 20).readableBytes)
}

var upload = HTTPClientRequest(url: social.process.baseURL + "/storage/v1/object/posts/\(owner.uuidString)/tile.jpg")
upload.method = .POST
upload.headers.add(name: "Authorization", value: "Bearer \(token)")
upload.headers.add(name: "Content-Type", value: "image/jpeg")
upload.body = .bytes(ByteBuffer(bytes: files[0]))
let uploaded = try await HTTPClient.shared.execute(upload, timeout: .seconds(30))
precondition(uploaded.status == .ok, "upload: \(uploaded.status)")
let variantURL = gateway.baseURL + "/storage/v1/render/image/authenticated/posts/\(owner.uuidString)/tile.jpg?width=200&height=200"
let asked = [("Authorization", "Bearer \(token)"), ("Accept", "image/webp")]
let first = try await get(variantURL, headers: asked)
precondition(first.status == 200, "variant: \(first.status)")

/// Latencies (ms) of requests sent at `rate` per second for `seconds`, each on its own schedule.
func paced(_ url: String, headers: [(String, String)]) async throws -> [Double] {
    let rate = 200
    let start = ContinuousClock.now
    return try await withThrowingTaskGroup(of: Double.self) { group in
        for index in 0..<(rate * seconds) {
            let due = start + .microseconds(index * 1_000_000 / rate)
            group.addTask {
                try await Task.sleep(until: due)
                let sent = ContinuousClock.now
                let answer = try await get(url, headers: headers)
                precondition(answer.status == 200, "\(url): \(answer.status)")
                return sent.duration(to: .now).seconds * 1000
            }
        }
        return try await group.reduce(into: []) { $0.append($1) }.sorted()
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
print("a kept 200 px variant (\(first.bytes) bytes WebP) through the gateway, 200 requests/s for \(seconds) s:")
for round in 1...rounds {
    let variant = try await paced(variantURL, headers: asked)
    let health = try await paced(gateway.baseURL + "/healthz", headers: [])
    print(
        "round \(round): variant p50 \(format(percentile(variant, 0.5), 2)) ms, p99 \(format(percentile(variant, 0.99), 2)) ms   /healthz p50 \(format(percentile(health, 0.5), 2)) ms, p99 \(format(percentile(health, 0.99), 2)) ms"
    )
}
print("goal: the variant's p99 ≤ 5 ms")
await gateway.stop()
await social.stop()
