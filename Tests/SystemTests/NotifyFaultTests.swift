import Contracts
import EventBus
import Foundation
import Kafka
import LocalStack
import Logging
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// notify's promise when Apple is away: APNs unreachable for 30 s under a stream of order moves,
/// then back — every notification still in date delivered once (counted in distinct `apns-id`s:
/// a stream cut mid-flight may reach Apple twice under one id, which Apple shows once), within 60 s
/// of APNs's return, none sent after its expiry. notify runs as its own process.
@Suite("notify under faults")
struct NotifyFaultTests {
    @Test func apnsDownFor30sUnderOrderMovesLosesNothingSendsNothingTwiceAndNothingExpired() async throws {
        let keys = FakePhotoCatalog(images: [:])
        try await keys.start()
        let apns = try APNsStandIn()
        try await apns.start()
        let database = try await TestPostgres.shared.makeDatabase()
        let (_, databaseURL) = try await database.makeServiceRole(schema: "notify", password: "fault-notify")
        let kafka = try await TestKafka.shared.running()
        let notify = try await ServiceProcess(
            "notify",
            environment: [
                "DATABASE_URL": databaseURL, "LOG_LEVEL": "error", "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false",
                "KAFKA_FETCH_MAX_WAIT": "10ms", "NOTIFY_JWKS_URL": keys.baseURL + "/jwks.json",
                "NOTIFY_JWT_ISSUER": "http://localhost:8080/auth/v1", "NOTIFY_CONSUMER_GROUP": "notify-fault-\(UUID().uuidString.prefix(8))",
                "NOTIFY_APNS_URL": apns.baseURL, "NOTIFY_APNS_SANDBOX_URL": apns.baseURL, "NOTIFY_APNS_CA_FILE": apns.caFile,
                "NOTIFY_APNS_KEY_FILE": apns.keyFile, "NOTIFY_APNS_KEY_ID": apns.keyID, "NOTIFY_APNS_TEAM_ID": apns.teamID,
                // Old events are consumed too, so that some expire while APNs is away.
                "NOTIFY_MAX_EVENT_AGE": "2h",
            ]
        )
        defer {
            Task {
                await notify.stop()
                await apns.stop()
                await keys.stop()
            }
        }
        let customers = (1...200).map { _ in UUID() }
        try await database.withClient { client in
            for (index, customer) in customers.enumerated() {
                try await client.query(
                    """
                    INSERT INTO notify.devices (token, user_id, platform, topic, environment)
                    VALUES (\(String(format: "%064x", index + 1)), \(customer), 'ios', 'fi.splash.TrackBite', 'production')
                    """
                )
            }
        }
        var logger = Logger(label: "notify-fault")
        logger.logLevel = .warning
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers, clientID: "notify-fault"),
            logger: logger
        )
        /// An order of `customer` accepted, stamped `age` ago.
        func accepted(_ customer: UUID, age: TimeInterval = 0) throws -> (record: KafkaRecord, order: String, expires: Date) {
            let owner = UUID()
            let order = UUID()
            let time = Date().addingTimeInterval(-age)
            let event = OrderStatusChanged(
                orderId: order,
                parties: OrderParties(customerId: customer, restaurantId: UUID(), restaurantOwnerId: owner, driverId: nil),
                status: .accepted,
                previousStatus: .placed,
                by: OrderActor(userId: owner, role: .restaurant),
                reason: nil,
                version: 2,
                changedAt: time
            )
            let envelope = try EventEnvelope(event, source: "/splash/tracking", time: time)
            return (envelope.record(topic: TopicCatalog.trackingOrders.name), order.uuidString.lowercased(), time.addingTimeInterval(3_600))
        }

        let (inDate, expiring) = try await withRunningServices([producer], logger: logger) {
            var inDate: Set<String> = []
            var expiring: Set<String> = []
            let start = ContinuousClock.now
            var returned: ContinuousClock.Instant?
            var down = false
            var second = 0
            // 50 s of moves, 10 a second: APNs is away from the 10th second to the 40th.
            while ContinuousClock.now - start < .seconds(50) {
                let elapsed = ContinuousClock.now - start
                if !down, returned == nil, elapsed >= .seconds(10) {
                    await apns.stop()
                    down = true
                } else if down, elapsed >= .seconds(40) {
                    try await apns.start()
                    down = false
                    returned = .now
                }
                var batch: [KafkaRecord] = []
                for index in 0..<10 {
                    let customer = customers[(second * 10 + index) % customers.count]
                    let move = try accepted(customer)
                    batch.append(move.record)
                    inDate.insert(move.order)
                }
                // While APNs is away, a few moves whose hour is nearly over: they expire within 5 s,
                // before it returns, and must never reach it.
                if down, second % 5 == 0, ContinuousClock.now - start < .seconds(34) {
                    let stale = try accepted(customers[second % customers.count], age: 3_600 - 5)
                    batch.append(stale.record)
                    expiring.insert(stale.order)
                }
                for result in await producer.send(batch) { if case .failure(let error) = result { throw error } }
                second += 1
                try await Task.sleep(until: start + .seconds(second))
            }
            let back = try #require(returned)
            let wanted = inDate
            try await eventually("every in-date notification reaches APNs within 60 s of its return", timeout: .seconds(65)) {
                Set(apns.received.filter { $0.status == 200 }.compactMap(\.subject)).isSuperset(of: wanted)
            }
            #expect(ContinuousClock.now - back < .seconds(60))
            return (inDate, expiring)
        }
        try await Task.sleep(for: .seconds(2))
        let received = apns.received
        let delivered = received.filter { $0.status == 200 }
        let missing = inDate.subtracting(delivered.compactMap(\.subject))
        #expect(missing.count == 0, "in-date notifications that never arrived")
        // One apns-id per notification: however often a request reached Apple, it showed once.
        let idsPerOrder = Dictionary(grouping: delivered, by: { $0.subject ?? "" }).mapValues { Set($0.compactMap { $0.headers["apns-id"] }) }
        let underTwoIDs = idsPerOrder.values.filter { $0.count != 1 }.count
        #expect(underTwoIDs == 0, "notifications that went under more than one apns-id")
        let sentExpired = Set(received.compactMap(\.subject)).intersection(expiring)
        #expect(sentExpired.count == 0, "notifications sent after their expiry")
        let late = received.filter { request in
            guard let expiration = request.headers["apns-expiration"].flatMap(Double.init) else { return true }
            return request.at.timeIntervalSince1970 > expiration
        }
        #expect(late.count == 0, "requests that reached APNs after their apns-expiration")
        let expired = try await database.count("notify.deliveries", where: "status = 'expired'")
        #expect(expired == expiring.count, "logged expired, against those made to expire")
        #expect(expiring.count >= 4)
    }
}
