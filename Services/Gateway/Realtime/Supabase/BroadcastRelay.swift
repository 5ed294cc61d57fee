import Contracts
import Foundation
import Identity
import Kafka
import Logging
import RealtimeWire

/// Supabase Realtime broadcasts across the gateway's replicas: a client's broadcast is delivered
/// at once to the clients on its channel on this replica, and published to `realtime.broadcasts`
/// (keyed by the channel's topic, so one channel's broadcasts stay in order) for the others. Every
/// replica reads that topic in its event feed's group and delivers what other replicas sent.
struct BroadcastRelay: Sendable {
    let producer: KafkaProducer
    let hub: ChangeHub
    let replica: String
    let logger: Logger

    /// What travels on the topic.
    struct Record: Codable {
        /// The replica that sent it, which has delivered it already.
        var origin: String
        var topic: String
        /// A text broadcast's payload (the only form replicas before binary broadcasts send).
        var payload: JSONValue?
        /// A binary user broadcast.
        var user: UserBroadcast?

        struct UserBroadcast: Codable {
            var event: String
            var json: Bool
            /// Base64 in the record.
            var payload: Data
        }

        var broadcast: Broadcast? {
            if let user { return .user(event: user.event, json: user.json, payload: user.payload) }
            return payload.map(Broadcast.text)
        }

        init(origin: String, topic: String, broadcast: Broadcast) {
            self.origin = origin
            self.topic = topic
            switch broadcast {
            case .text(let payload): self.payload = payload
            case .user(let event, let json, let payload): user = UserBroadcast(event: event, json: json, payload: payload)
            }
        }
    }

    /// Delivers `broadcast` on `topic` here and sends it to the other replicas.
    /// - Throws: `KafkaDeliveryError` when the other replicas could not be reached.
    func send(topic: String, _ broadcast: Broadcast, from client: UInt64) async throws {
        hub.broadcast(topic: topic, broadcast, from: client)
        let value = try JSONEncoder().encode(Record(origin: replica, topic: topic, broadcast: broadcast))
        _ = try await producer.send(KafkaRecord(topic: TopicCatalog.realtimeBroadcasts.name, key: topic, value: Array(value)))
    }

    /// A record read from `realtime.broadcasts`: delivered here unless this replica sent it.
    func received(_ message: KafkaMessage) {
        guard let record = try? JSONDecoder().decode(Record.self, from: Data(message.value)), let broadcast = record.broadcast else {
            logger.warning(
                "Not delivering an unreadable broadcast",
                metadata: ["kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)"]
            )
            return
        }
        guard record.origin != replica, record.topic.hasPrefix("realtime:") else { return }
        hub.broadcast(topic: record.topic, broadcast, from: nil)
    }
}
