import Contracts
import Foundation
import Imaging
import LocalStack
import ServiceKit
import TestSupport

// edit-render's figures (`make bench-render`), in one run with their baselines:
//  1. a 2560×1600 photo → 1080 px, `sepia` + `vignette`, JPEG within 1 MB: images per second on
//     every core (one render per core, one libvips thread each) and single-render latency —
//     against Pillow doing the same operations (deploy/bench/pillow_render.py);
//  2. the resize alone (no filters, same encoder rule) against `vipsthumbnail`, both one thread
//     per image, on every core;
//  3. preview latency at 400 px (p50, p99);
//  4. peak memory (max RSS) of a process rendering the 5640×3172 painting of `mate-backgrounds`.
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
let samples = BenchmarkArguments.integer("--samples", default: 60)
let cores = ProcessInfo.processInfo.activeProcessorCount
let photoPath = ProcessInfo.processInfo.environment["BENCH_PHOTO"] ?? "Tests/ImagingTests/Fixtures/photos/Aqua.jpg"
let largePath = LargePainting.url.path

// A child run: render the large painting once and exit, so the parent can read its peak memory.
if BenchmarkArguments.flag("--render-once") {
    let source = Array(try Data(contentsOf: URL(fileURLWithPath: largePath)))
    let rendered = try RenderPipeline.render(
        source,
        filters: try FilterChain([FilterStep(name: "sepia"), FilterStep(name: "vignette", parameters: ["intensity": 0.6])]),
        output: OutputRules()
    )
    print("\(rendered.width)x\(rendered.height) \(rendered.bytes.count) bytes q\(rendered.quality)")
    exit(0)
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

struct Figures {
    var imagesPerSecond: Double
    var p50: Double
    var p99: Double
}

/// Latency of `samples` renders one after another, then throughput with one render per core.
func measure(_ renderer: Renderer, _ source: [UInt8], _ chain: FilterChain, _ rules: OutputRules) async throws -> Figures {
    _ = try await renderer.render(source, filters: chain, output: rules)
    var latencies: [Double] = []
    for _ in 0..<samples {
        let started = ContinuousClock.now
        _ = try await renderer.render(source, filters: chain, output: rules)
        latencies.append(started.duration(to: .now).seconds * 1000)
    }
    latencies.sort()
    let deadline = ContinuousClock.now + .seconds(seconds)
    let started = ContinuousClock.now
    let count = try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<renderer.threads {
            group.addTask {
                var count = 0
                while ContinuousClock.now < deadline {
                    _ = try await renderer.render(source, filters: chain, output: rules)
                    count += 1
                }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
    let elapsed = started.duration(to: .now).seconds
    return Figures(
        imagesPerSecond: Double(count) / elapsed,
        p50: latencies[latencies.count / 2],
        p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
    )
}

/// Runs `command` and returns its standard output; stops the benchmark if it fails.
func run(_ command: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
    let process = ProcessCommand(URL(fileURLWithPath: "/usr/bin/env"), [command] + arguments, environment: environment).makeProcess()
    let output = Pipe()
    process.standardOutput = .pipe(output)
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    precondition(process.terminationStatus == 0, "\(command) failed with status \(process.terminationStatus)")
    return String(decoding: data, as: UTF8.self)
}

let source = Array(try Data(contentsOf: URL(fileURLWithPath: photoPath)))
let renderer = try Renderer(threads: cores)
let effect = try FilterChain([FilterStep(name: "sepia"), FilterStep(name: "vignette", parameters: ["intensity": 0.6])])
print("photo: \(photoPath) (\(source.count / 1024) KB), \(cores) cores, \(seconds) s per throughput run, \(samples) latency samples")

// MARK: 4. Peak memory on the 5640×3172 painting
// First, while it is the only child: RUSAGE_CHILDREN reports the largest child waited for.

if FileManager.default.fileExists(atPath: largePath) {
    let child = try run(CommandLine.arguments[0], ["--render-once"])
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    print(
        "Peak memory rendering \(largePath.split(separator: "/").last!) (5640×3172, 16 MB) → \(child.trimmingCharacters(in: .whitespacesAndNewlines)): max RSS \(usage.ru_maxrss / 1024) MB (whole process)"
    )
} else {
    print("Peak memory: \(largePath) missing; `apt-get install mate-backgrounds`")
}
// MARK: 1. sepia + vignette against Pillow

let splash = try await measure(renderer, source, effect, OutputRules())
print("Splash  sepia+vignette → 1080, ≤1 MB: \(format(splash.imagesPerSecond)) images/s, p50 \(format(splash.p50)) ms, p99 \(format(splash.p99)) ms")
let pillowOutput = try run(
    "python3",
    ["deploy/bench/pillow_render.py", "--photo", photoPath, "--seconds", "\(seconds)", "--processes", "\(cores)", "--samples", "\(min(samples, 40))"]
)
let pillow = try JSONSerialization.jsonObject(with: Data(pillowOutput.utf8)) as! [String: Any]
let pillowRate = pillow["images_per_second"] as! Double
print(
    "Pillow \(pillow["pillow"] as! String) sepia+vignette → 1080, ≤1 MB: \(format(pillowRate)) images/s, p50 \(format(pillow["p50_ms"] as! Double)) ms, p99 \(format(pillow["p99_ms"] as! Double)) ms"
)
print("  → Splash / Pillow throughput: \(format(splash.imagesPerSecond / pillowRate, 2))× (goal ≥ 5×)")

// MARK: 2. The resize alone against vipsthumbnail

let resize = try await measure(renderer, source, try FilterChain([]), OutputRules())
print("Splash  resize only → 1080: \(format(resize.imagesPerSecond)) images/s, p50 \(format(resize.p50)) ms")
// vipsthumbnail, one libvips thread per image like ours, one process per core, each shrinking the
// same photo `batch` times in one invocation (so process start-up is not what is measured).
let batch = max(20, Int(resize.imagesPerSecond) * seconds / max(cores, 1))
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("bench-render-\(UUID().uuidString.prefix(8))")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }
let inputs = (0..<batch).map { index -> String in
    let link = scratch.appendingPathComponent("in-\(index).jpg").path
    try? FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: FileManager.default.currentDirectoryPath + "/" + photoPath)
    return link
}
let thumbnailStarted = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
    for worker in 0..<cores {
        group.addTask {
            _ = try run(
                "vipsthumbnail",
                ["--size", "1080", "-o", scratch.path + "/w\(worker)-%s.jpg[Q=92,strip,optimize_coding]"] + inputs,
                environment: ["VIPS_CONCURRENCY": "1"]
            )
        }
    }
    try await group.waitForAll()
}
let thumbnailRate = Double(batch * cores) / thumbnailStarted.duration(to: .now).seconds
print("vipsthumbnail → 1080: \(format(thumbnailRate)) images/s")
print("  → vipsthumbnail / Splash resize time per image: \(format(thumbnailRate / resize.imagesPerSecond, 2))× (goal: Splash within 1.3×)")

// MARK: 3. Preview at 400 px

let preview = try await measure(renderer, source, effect, .preview())
print(
    "Preview sepia+vignette at 400 px: p50 \(format(preview.p50)) ms, p99 \(format(preview.p99)) ms (goal p50 ≤ 30 ms); \(format(preview.imagesPerSecond)) previews/s"
)

try await renderer.shutdown()
