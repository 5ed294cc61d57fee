import Database
import EventBus
import ServiceKit

/// The settings every Splash service that keeps state and speaks on Kafka reads alike, embedded
/// in its `…Configuration` as `standard`: its HTTP server (`HTTP_*`), its database (`DATABASE_*`)
/// and its event bus (`KAFKA_*`, `EVENTS_*`, `OUTBOX_*`), all described in docs/configuration.md.
///
/// Where a service finds auth's keys (`KeySetSettings`, `<PREFIX>_JWKS_URL` and `_JWT_ISSUER`) is
/// read beside it by the services that verify tokens: auth, which issues them, has none to fetch.
package struct StandardSettings: Sendable {
    package var http: HTTPServerSettings
    package var database: DatabaseSettings
    package var events: EventBusSettings

    /// - Parameter defaultPort: the service's port when `HTTP_PORT` is not set.
    package init(from reader: ConfigurationReader, defaultPort: Int) throws(ConfigurationError) {
        http = try HTTPServerSettings(from: reader, defaultPort: defaultPort)
        database = try DatabaseSettings(from: reader)
        events = try EventBusSettings(from: reader)
    }
}
