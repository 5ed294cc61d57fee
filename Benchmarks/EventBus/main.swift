import Contracts
import EventBus
import Foundation
import Kafka
import LocalStack
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import Synchronization
import TestSupport

// The event bus's figures, each against its baseline in the same run (`make bench`):
//  1. producer throughput with 1 KB records: our KafkaProducer vs `kcat -P`, same broker, same
//     settings (idempotence, acks=all, lz4, linger 5 ms), same keyed records, alternating
//     `--rounds` times (5), with the CPU each side's process used;
//  2. end-to-end latency from outbox commit to consumer handler at 1,000 events/s: p50, p99,
//     beside the latency of the Kafka hop alone (send → handler), its floor; both producers
//     linger as a service's does (`KAFKA_LINGER`, 0 ms unless `--linger-ms`).
let logger: Logger = {
    var logger = Logger(label: "bench")
    logger.logLevel = .error
    return logger
}()
let arguments = CommandLine.arguments
let messageCount = BenchmarkArguments.integer("--messages", default: 200_000)
let latencySeconds = BenchmarkArguments.integer("--seconds", default: 10)

let cluster = try KafkaEmbeddedCluster(brokers: 3, topics: [])
let value = String(repeating: "x", count: 1_024)

@Sendable func makeTopic(_ name: String) throws -> Topic {
    let topic = Topic("bench.\(name).\(UUID().uuidString.prefix(6).lowercased())", partitions: 6, retention: .seconds(3_600))
    try cluster.createTopic(topic)
    return topic
}

// MARK: 1. Producer throughput

/// Our producer against `kcat -P`: the same keyed 1 KB records, broker and settings. Returns our
/// rate over kcat's.
func measureProducerThroughput() async throws -> Double {
    let kcatTopic = try makeTopic("kcat")
    let input = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID()).txt")
    try (0..<messageCount).map { "key-\($0 % 100)\t\(value)" }.joined(separator: "\n").appending("\n").write(
        to: input,
        atomically: true,
        encoding: .utf8
    )
    defer { try? FileManager.default.removeItem(at: input) }
    guard let kcat = TestKafka.kcat else { fatalError("kcat is not installed (make deps)") }
    let kcatStart = ContinuousClock.now
    let kcatCPU = CPUTime.now()
    _ = try await ProcessCommand(
        kcat,
        [
            "-P", "-b", cluster.bootstrapServers, "-t", kcatTopic.name, "-K", "\t", "-z", "lz4",
            "-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=5", "-X", "batch.size=1000000",
            "-X", "queue.buffering.max.messages=1000000", "-l", input.path,
        ]
    ).runToCompletion()
    let kcatRate = Double(messageCount) * 1_000 / (ContinuousClock.now - kcatStart).milliseconds
    let kcatCPUSeconds = CPUTime.now().since(kcatCPU)

    let ourTopic = try makeTopic("swift")
    let producer = try KafkaProducer(
        configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: "bench"),
        logger: logger
    )
    let records = (0..<messageCount).map { KafkaRecord(topic: ourTopic.name, key: "key-\($0 % 100)", value: Array(value.utf8)) }
    let (ourRate, ourCPUSeconds) = try await withRunningServices([producer], logger: logger) {
        try await producer.checkConnection(timeout: .seconds(10))
        let start = ContinuousClock.now
        let cpu = CPUTime.now()
        let outcomes = await producer.send(records)
        let cpuSeconds = CPUTime.now().since(cpu)
        let elapsed = ContinuousClock.now - start
        let failed = outcomes.filter { if case .failure = $0 { true } else { false } }.count
        precondition(failed == 0, "\(failed) records failed")
        return (Double(messageCount) * 1_000 / elapsed.milliseconds, cpuSeconds)
    }
    print(
        String(
            format:
                "producer, %d × 1 KB: kcat -P %.0f msg/s, KafkaProducer %.0f msg/s, ratio %.2f; CPU s (bench process + kcat): kcat run %.2f + %.2f, ours %.2f",
            messageCount,
            kcatRate,
            ourRate,
            ourRate / kcatRate,
            kcatCPUSeconds.own,
            kcatCPUSeconds.children,
            ourCPUSeconds.own
        )
    )
    return ourRate / kcatRate
}

/// CPU seconds used so far by this process and by its waited-for children.
struct CPUTime {
    var own: Double
    var children: Double
    static func now() -> CPUTime {
        func seconds(_ who: Int32) -> Double {
            var usage = rusage()
            getrusage(__rusage_who_t(who), &usage)
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
        return CPUTime(own: seconds(RUSAGE_SELF.rawValue), children: seconds(RUSAGE_CHILDREN.rawValue))
    }
    func since(_ start: CPUTime) -> (own: Double, children: Double) { (own - start.own, children - start.children) }
}

// `--messages 0` skips it (to study latency alone).
// Each round sends 200,000 records in a fraction of a second, so one round's ratio is at the mercy
// of the shared cores; `--rounds` alternates kcat and ours that many times and gives the median.
let rounds = messageCount > 0 ? BenchmarkArguments.integer("--rounds", default: 5) : 0
var ratios: [Double] = []
for _ in 0..<rounds { ratios.append(try await measureProducerThroughput()) }
if rounds > 1 {
    let sorted = ratios.sorted()
    print(String(format: "producer over kcat -P, %d rounds: median %.2f (%.2f–%.2f)", rounds, sorted[rounds / 2], sorted[0], sorted[rounds - 1]))
}

// MARK: 2. Outbox commit → handler latency at 1,000 events/s

final class Latencies: Sendable {
    private let values = Mutex<[Double]>([])
    func add(_ value: Double) { values.withLock { $0.append(value) } }
    var count: Int { values.withLock { $0.count } }
    var sorted: [Double] { values.withLock { $0.sorted() } }
}

@Sendable func option(_ name: String) -> Int64? {
    arguments.firstIndex(of: name).map { Int64(arguments[$0 + 1])! }
}

/// Runs a consumer group on a fresh topic and `write`s 1,000 events a second for `latencySeconds`;
/// returns, for each event, the time from its `ce_time` (set just before it is written) to its
/// handler.
@Sendable func measureLatency(
    _ label: String,
    write: @escaping @Sendable (_ producer: KafkaProducer, _ topic: Topic, _ event: ProbeEvent) async throws -> Void,
    services: (KafkaProducer) throws -> [any Service] = { _ in [] }
) async throws {
    let latencies = Latencies()
    let topic = try makeTopic("latency")
    var producerConfiguration = KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: "bench-\(label)")
    producerConfiguration.linger = .milliseconds(option("--linger-ms") ?? 0)
    let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
    var consumerConfiguration = KafkaConsumerConfiguration(
        bootstrapServers: cluster.bootstrapServers,
        clientID: "bench",
        groupID: "bench-\(UUID())",
        topics: [topic.name]
    )
    // The embedded broker answers an empty fetch only when its wait is over; `splash up` gives
    // services 10 ms (KAFKA_FETCH_MAX_WAIT), and so does this run unless told otherwise.
    consumerConfiguration.fetchMaxWait = .milliseconds(option("--fetch-wait-ms") ?? 10)
    let consumer = EventConsumer(
        configuration: consumerConfiguration,
        registry: EventRegistry([ProbeEvent.self]),
        deadLetters: producer,
        retry: RetryPolicy(),
        logger: logger
    ) { event in
        guard event.envelope.key != "warm-up" else { return }
        latencies.add(Date().timeIntervalSince(event.envelope.time))
    }
    try await withRunningServices([producer] + services(producer) + [consumer], logger: logger) {
        try await write(producer, topic, ProbeEvent(key: "warm-up", seq: 0))
        try await Task.sleep(for: .seconds(5))  // the consumer joins its group
        let total = latencySeconds * 1_000
        let start = ContinuousClock.now
        for index in 0..<total {
            try await Task.sleep(until: start + .milliseconds(index))
            try await write(producer, topic, ProbeEvent(key: "key-\(index % 100)", seq: index / 100))
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while latencies.count < total, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
    }
    let sorted = latencies.sorted
    func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1_000 }
    print(
        String(
            format: "%@, %d events at 1,000/s (linger %lld ms, fetch wait %lld ms): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
            label,
            sorted.count,
            producerConfiguration.linger.wholeMilliseconds,
            consumerConfiguration.fetchMaxWait.wholeMilliseconds,
            percentile(0.5),
            percentile(0.99),
            (sorted.last ?? 0) * 1_000
        )
    )
}

// `--seconds 0` skips it (to study the producer alone).
if latencySeconds > 0 {
    // The Kafka hop alone: KafkaProducer.send → handler. It is the floor under the outbox path.
    try await measureLatency("send → handler") { producer, topic, event in
        _ = try await producer.send(try EventEnvelope(event, source: "bench").record(topic: topic.name))
    }

    let database = try await TestPostgres.shared.makeDatabase()
    try await database.withClient { client in
        try await ProbeEffects.prepare(schema: "bench", client: client, logger: logger)
        let outbox = try Outbox(schema: "bench", service: "bench")
        try await measureLatency(
            "outbox commit → handler",
            write: { _, topic, event in
                try await client.withTransaction(logger: logger) { connection in
                    // `time` is the envelope's ce_time; taken last, just before the commit.
                    _ = try await outbox.append(event, time: Date(), topic: topic.name, on: connection, logger: logger)
                }
            },
            services: { producer in
                [try OutboxRelay(schema: "bench", client: client, producer: producer, logger: logger)]
            }
        )
    }
}
cluster.shutdown()
