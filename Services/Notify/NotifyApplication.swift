import AsyncHTTPClient
import AsyncSignals
import Contracts
import Database
import EventBus
import Foundation
import Hummingbird
import KeySetClient
import Logging
import Mail
import PostgresNIO
import ServiceAssembly
import ServiceKit

/// The schema notify owns.
let notifySchema = "notify"

/// What notify reads, and the events on them it tells people of.
enum NotifyEvents {
    static let topics = ConsumerGroupCatalog.notify.topics
    static let registry = EventRegistry([
        OrderPlaced.self, OrderStatusChanged.self, DriverAssigned.self, OrderArriving.self, RestaurantChanged.self,
        PhotoLiked.self, PostCreated.self, PostDeleted.self, UserRegistered.self, ProfileUpdated.self, EditCompleted.self,
        EditFailed.self, UserDeleted.self,
    ])
}

/// Builds notify: its API (`/v1/devices`, `/v1/notification-settings`), the consumer that turns
/// other services' events into deliveries (through the inbox: one delivery per event per device,
/// whatever Kafka redelivers), and the sender that takes them to APNs — or, without an APNs key,
/// to the sink the console shows.
/// - Throws: when a migration does not apply, Kafka refuses the topics, or the APNs key is no
///   P-256 key.
func buildApplication(_ config: NotifyConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let base = try await EventedService.prepare(
        "notify",
        schema: notifySchema,
        migrations: try Migration.load(bundle: .module),
        topics: NotifyEvents.topics + [TopicCatalog.notifyErasures],
        settings: config.standard,
        logger: logger
    )
    let http = HTTPClient.standard(logger: logger)
    let keys = KeySetCache(config.keys, client: http, logger: logger)
    let devices = DeviceStore(client: base.client, logger: logger)
    let projections = Projections(logger: logger)
    let wakeup = Wakeup()

    var apns: APNsClient?
    var apnsHTTP: HTTPClient?
    if let settings = config.apns {
        let client = try APNsClient.makeHTTPClient(caFile: settings.caFile, logger: logger)
        apnsHTTP = client
        apns = APNsClient(
            http: client,
            token: try ProviderToken(pem: settings.key, keyID: settings.keyID, teamID: settings.teamID),
            production: settings.production,
            sandbox: settings.sandbox,
            logger: logger
        )
    }
    let queue = DeliveryQueue(client: base.client, channel: apns == nil ? .sink : .apns, maxAge: config.maxEventAge, logger: logger)
    let likes = LikeWindows(client: base.client, queue: queue, window: config.likeWindow, logger: logger)
    let mailWakeup = Wakeup()
    try await PostgresClient.withStartupClient(config.standard.database.client, logger: logger) { client in
        try await MailOutbox.migrate(schema: notifySchema, on: client, logger: logger)
    }
    let mailOutbox = try MailOutbox(schema: notifySchema, wakeup: mailWakeup)
    let directory = config.authServiceToken.map { AuthDirectory(http: http, authURL: config.authURL, serviceToken: $0, logger: logger) }
    if directory == nil { logger.notice("No AUTH_SERVICE_TOKEN: receipts are not sent (their addresses are auth's)") }
    let intake = EventIntake(
        projections: projections,
        queue: queue,
        likes: likes,
        receipts: directory.map { _ in Receipts(outbox: mailOutbox, logger: logger) },
        erasure: UserErasure(outbox: base.outbox, mailOutbox: mailOutbox, deletedUsers: keys.deletedUsers, logger: logger),
        wakeup: wakeup,
        logger: logger
    )

    var parts = base.applicationParts(metrics: runtime.metrics)
    parts.services += [HTTPClientService(client: http), keys]
    base.refusingDeletedUsers(of: keys, in: &parts)
    if let apnsHTTP { parts.services.append(HTTPClientService(client: apnsHTTP)) }
    parts.services += [
        base.consumer(group: config.consumerGroup, topics: NotifyEvents.topics, registry: NotifyEvents.registry) { received, connection in
            try await intake.apply(received, on: connection)
        },
        MailRelay(outbox: mailOutbox, client: base.client, destination: config.mail.destination, logger: logger) { user in
            try await directory?.address(of: user)
        },
        RepeatingTask("Closing like windows", every: .seconds(1), logger: logger) {
            if try await likes.closeDue() > 0 { wakeup.signal() }
        },
        Sender(
            queue: queue,
            apns: apns,
            wakeup: wakeup,
            backoff: Backoff(base: config.retryBackoff, maximum: .seconds(300)),
            concurrency: config.concurrency,
            pollInterval: .seconds(1),
            logRetention: .seconds(7 * 86_400),
            logger: logger
        ),
    ]
    parts.routePolicies = [RoutePolicy(pathPrefix: "/v1", maxBodySize: 16 << 10, timeout: config.standard.http.requestTimeout)]
    logger.info("notify starting", metadata: ["channel": "\(queue.channel.rawValue)"])
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        let group = router.group("v1")
        DevicesController(devices: devices, keys: keys).addRoutes(to: group)
        SettingsController(devices: devices, keys: keys).addRoutes(to: group)
        AdminController(client: base.client, mailOutbox: mailOutbox, keys: keys, logger: logger).addRoutes(to: group)
    }
}
