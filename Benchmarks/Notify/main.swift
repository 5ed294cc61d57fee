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

// notify's figures (`make bench-notify`), each beside its baseline in the same run:
//  1. an event on Kafka to its notification at APNs (the stand-in in this process, HTTP/2 over
//     TLS), at `--rate` notifications a second for `--seconds`: p50/p99 of the time from the
//     event's time to the stand-in receiving the request, beside a bare consumer of the same
//     topic in a group of its own (Kafka's hop alone) reading the same events;
//  2. `--burst` devices, each sent one notification for one of as many order events published at
//     once: the time until the stand-in has them all, over how many connections, beside the bare
//     consumer reading the same events.
// notify runs as its own process (release build) against the test support's Postgres and
// embedded broker; the stand-in, the publisher and the bare consumer share this process and the
// two cores.
let seconds = BenchmarkArguments.integer("--seconds", default: 20)
let rate = BenchmarkArguments.integer("--rate", default: 500)
let burst = BenchmarkArguments.integer("--burst", default: 10_000)
let customers = max(burst, rate)

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
func note(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func percentile(_ values: [Double], _ p: Double) -> Double { Percentiles.value(p, of: values) }

var logger = Logger(label: "notify-bench")
logger.logLevel = .warning

// MARK: The stack

let keys = FakePhotoCatalog(images: [:])
try await keys.start()
let apns = try APNsStandIn()
try await apns.start()
let database = try await TestPostgres.shared.makeDatabase()
let (_, databaseURL) = try await database.makeServiceRole(schema: "notify", password: "bench")
let kafka = try await TestKafka.shared.running()
let notify = try await ServiceProcess(
    "notify",
    environment: [
        "DATABASE_URL": databaseURL, "DATABASE_POOL_SIZE": "8", "LOG_LEVEL": "error",
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
        "NOTIFY_JWKS_URL": keys.baseURL + "/jwks.json", "NOTIFY_JWT_ISSUER": "http://localhost:8080/auth/v1",
        "NOTIFY_CONSUMER_GROUP": "notify-bench-\(getpid())",
        "NOTIFY_APNS_URL": apns.baseURL, "NOTIFY_APNS_SANDBOX_URL": apns.baseURL, "NOTIFY_APNS_CA_FILE": apns.caFile,
        "NOTIFY_APNS_KEY_FILE": apns.keyFile, "NOTIFY_APNS_KEY_ID": apns.keyID, "NOTIFY_APNS_TEAM_ID": apns.teamID,
    ]
)

/// Customer `n`'s id; their phone's token is `n` in 64 hex digits.
func customer(_ n: Int) -> UUID { UUID(uuidString: "00000000-0000-4000-8000-\(String(format: "%012x", n))")! }
try await database.withClient { client in
    try await client.query(
        PostgresQuery(
            unsafeSQL: """
                INSERT INTO notify.devices (token, user_id, platform, topic, environment)
                SELECT lpad(to_hex(g), 64, '0'), ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'ios',
                       'fi.splash.TrackBite', 'production'
                FROM generate_series(1, \(customers)) g
                """
        )
    )
}

let producer = try KafkaProducer(
    configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers, clientID: "notify-bench"),
    logger: logger
)

/// When each order's event was stamped, by order id (lower-case), as the publisher made it.
let stamped = Mutex<[String: Date]>([:])

/// An order of customer `n` accepted by its restaurant, as tracking publishes it (with the
/// restaurant's name and the item count), stamped now.
func accepted(_ n: Int) throws -> KafkaRecord {
    let owner = UUID()
    let order = UUID()
    let now = Date()
    var event = OrderStatusChanged(
        orderId: order,
        parties: OrderParties(customerId: customer(n), restaurantId: UUID(), restaurantOwnerId: owner, driverId: nil),
        status: .accepted,
        previousStatus: .placed,
        by: OrderActor(userId: owner, role: .restaurant),
        reason: nil,
        version: 2,
        changedAt: now
    )
    event.restaurantName = "Pizzeria Luna"
    event.itemCount = 2
    stamped.withLock { $0[order.uuidString.lowercased()] = now }
    return try EventEnvelope(event, source: "/splash/tracking", time: now).record(topic: TopicCatalog.trackingOrders.name)
}

/// Publishes `records` and waits for every delivery report.
func publish(_ records: [KafkaRecord]) async throws {
    for result in await producer.send(records) { if case .failure(let error) = result { throw error } }
}

/// A bare consumer of `tracking.orders` in a group of its own, from the topic's end: how long
/// after its time each event reached it, and when.
final class BareHop: Sendable {
    let consumer: KafkaConsumer
    let seen = Mutex<[(delay: Double, at: Date)]>([])

    init(bootstrapServers: String, logger: Logger) throws {
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: bootstrapServers,
            clientID: "bare-hop",
            groupID: "bare-hop-\(UUID())",
            topics: [TopicCatalog.trackingOrders.name]
        )
        configuration.startAt = .latest
        configuration.commitsOffsets = false
        configuration.fetchMaxWait = .milliseconds(10)
        consumer = try KafkaConsumer(configuration: configuration, logger: logger)
    }

    func read() async {
        await withTaskGroup(of: Void.self) { group in
            for await partition in consumer.partitions {
                group.addTask {
                    for await message in partition {
                        guard let envelope = try? EventEnvelope(message) else { continue }
                        let now = Date()
                        self.seen.withLock { $0.append((now.timeIntervalSince(envelope.time) * 1_000, now)) }
                    }
                }
            }
        }
    }

    /// Forgets what it has seen.
    func reset() { seen.withLock { $0.removeAll() } }
    var count: Int { seen.withLock { $0.count } }
}

let hop = try BareHop(bootstrapServers: kafka.bootstrapServers, logger: logger)

try await withRunningServices([producer, hop.consumer], logger: logger) {
    let reading = Task { await hop.read() }
    defer { reading.cancel() }
    // Both consumers have their partitions before the first event.
    try await Task.sleep(for: .seconds(3))

    // MARK: 1. Event to APNs at a steady rate

    let batch = max(1, rate / 100)
    let total = rate * seconds
    var before = apns.received.count
    hop.reset()
    var sent = 0
    let start = ContinuousClock.now
    while sent < total {
        try await publish(try (0..<batch).map { try accepted((sent + $0) % customers + 1) })
        sent += batch
        try await Task.sleep(until: start + .milliseconds(10 * sent / batch))
    }
    let publishing = (ContinuousClock.now - start).seconds
    var deadline = ContinuousClock.now + .seconds(60)
    while apns.received.count - before < sent || hop.count < sent, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(100))
    }
    var arrived = Array(apns.received.dropFirst(before))
    let times = stamped.withLock { $0 }
    let latencies = arrived.compactMap { request in request.subject.flatMap { times[$0] }.map { request.at.timeIntervalSince($0) * 1_000 } }
    let hops = hop.seen.withLock { $0.map(\.delay) }
    note(
        "1. \(sent) events in \(format(publishing)) s (\(format(Double(sent) / publishing, 0))/s): \(arrived.count) at APNs, \(hops.count) at the bare consumer"
    )
    note(
        "   event → APNs request: p50 \(format(percentile(latencies, 0.5))) ms, p99 \(format(percentile(latencies, 0.99))) ms, max \(format(latencies.max() ?? .nan)) ms"
    )
    note(
        "   event → bare consumer: p50 \(format(percentile(hops, 0.5))) ms, p99 \(format(percentile(hops, 0.99))) ms, max \(format(hops.max() ?? .nan)) ms"
    )

    // MARK: 2. A burst: one notification each to `burst` devices

    before = apns.received.count
    let connectionsBefore = apns.connections
    hop.reset()
    let records = try (1...burst).map { try accepted($0) }
    let burstStart = Date()
    try await publish(records)
    let published = Date().timeIntervalSince(burstStart)
    deadline = ContinuousClock.now + .seconds(120)
    while apns.received.count - before < burst || hop.count < burst, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(50))
    }
    arrived = Array(apns.received.dropFirst(before))
    let lastAtAPNs = arrived.map(\.at).max().map { $0.timeIntervalSince(burstStart) } ?? .nan
    let lastAtHop = hop.seen.withLock { $0.map(\.at).max() }.map { $0.timeIntervalSince(burstStart) } ?? .nan
    let distinct = Set(arrived.compactMap { $0.headers["apns-id"] }).count
    note("2. \(burst) events published in \(format(published, 2)) s")
    note(
        "   all \(arrived.count) at APNs (\(distinct) distinct apns-ids, \(Set(arrived.map(\.connection)).count) connection(s), \(apns.connections - connectionsBefore) new) after \(format(lastAtAPNs, 2)) s"
    )
    note("   all \(hop.count) at the bare consumer after \(format(lastAtHop, 2)) s")
    // Where the time goes: the consumer making the deliveries, the sender taking them to APNs.
    let made = try await database.withClient { client in
        try await client.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT extract(epoch FROM max(created_at))::float8, extract(epoch FROM max(finished_at))::float8
                    FROM notify.deliveries WHERE created_at >= to_timestamp(\(burstStart.timeIntervalSince1970))
                    """
            )
        ).collect().first?.decode((Double, Double).self)
    }
    if let (created, finished) = made {
        note(
            "   the last delivery made (consumer) after \(format(created - burstStart.timeIntervalSince1970, 2)) s, the last logged (sender) after \(format(finished - burstStart.timeIntervalSince1970, 2)) s"
        )
    }
}
await notify.stop()
await apns.stop()
await keys.stop()
