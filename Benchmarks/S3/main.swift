// The S3 blob store's PUT and GET throughput for 1 MB objects against moto on loopback, beside
// boto3 (the client a Python team would use) doing the same operations against the same server in
// the same run: rounds alternating the two, at 1 and at 8 requests in flight.
//
// Usage: S3Benchmark [--objects 200] [--rounds 3]

import AsyncHTTPClient
import Blobs
import Foundation
import LocalStack
import Logging
import S3Blobs
import TestSupport

let objects = BenchmarkArguments.integer("--objects", default: 200)
let rounds = BenchmarkArguments.integer("--rounds", default: 3)
let size = 1 << 20

let server = try await MotoServer()
let bucket = "bench-\(getpid())"
var logger = Logger(label: "s3-bench")
logger.logLevel = .error
let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: S3BlobStore.httpConfiguration)
let store = S3BlobStore(
    settings: S3Settings(endpoint: server.endpoint, region: "us-east-1", bucket: bucket, accessKeyID: "bench", secretAccessKey: "bench-secret"),
    http: http,
    logger: logger
)
try await store.createBucketIfMissing()
let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }

/// Objects per second for `objects` operations, `concurrency` at a time.
func timed(concurrency: Int, _ operation: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<objects {
            if index >= concurrency { try await group.next() }
            group.addTask { try await operation(index) }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - start
    return Double(objects) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

let boto3Script = """
    import boto3, sys, time
    from botocore.config import Config
    from concurrent.futures import ThreadPoolExecutor
    endpoint, bucket, objects, concurrency, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="bench", aws_secret_access_key="bench-secret",
                      config=Config(max_pool_connections=max(10, concurrency)))
    payload = bytes((i * 2654435761 >> 13) & 0xFF for i in range(1 << 20))
    def run(operation):
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(operation, range(objects)))
        return objects / (time.monotonic() - start)
    put = run(lambda i: s3.put_object(Bucket=bucket, Key=f"{prefix}/{i}", Body=payload))
    get = run(lambda i: s3.get_object(Bucket=bucket, Key=f"{prefix}/{i}")["Body"].read())
    print(put, get)
    """

struct Figures { var swiftPut: [Double] = [], swiftGet: [Double] = [], botoPut: [Double] = [], botoGet: [Double] = [] }
var byConcurrency: [Int: Figures] = [:]
for round in 0..<rounds {
    for concurrency in [1, 8] {
        var figures = byConcurrency[concurrency] ?? Figures()
        let prefix = "swift-\(round)-\(concurrency)"
        figures.swiftPut.append(try await timed(concurrency: concurrency) { try await store.put(BlobKey("\(prefix)/\($0)")!, bytes: payload) })
        figures.swiftGet.append(try await timed(concurrency: concurrency) { _ = try await store.get(BlobKey("\(prefix)/\($0)")!) })
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c", boto3Script, server.endpoint.absoluteString, bucket, String(objects), String(concurrency),
                "boto-\(round)-\(concurrency)",
            ]
        ).runToCompletion()
        let numbers = output.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        precondition(numbers.count >= 2, "boto3 printed: \(output)")
        figures.botoPut.append(numbers[numbers.count - 2])
        figures.botoGet.append(numbers[numbers.count - 1])
        byConcurrency[concurrency] = figures
    }
}

func spread(_ values: [Double]) -> String {
    let sorted = values.sorted()
    return String(format: "%.0f objects/s (%.0f–%.0f)", sorted[sorted.count / 2], sorted.first!, sorted.last!)
}
print(
    "== the S3 blob store against moto on loopback, \(objects) objects of 1 MiB per operation, \(rounds) rounds alternating with boto3 (median, range) =="
)
for concurrency in [1, 8] {
    let figures = byConcurrency[concurrency]!
    print("  \(concurrency) in flight:  PUT  S3BlobStore \(spread(figures.swiftPut))   boto3 \(spread(figures.botoPut))")
    print("  \(concurrency) in flight:  GET  S3BlobStore \(spread(figures.swiftGet))   boto3 \(spread(figures.botoGet))")
}
try await http.shutdown().get()
server.stop()
