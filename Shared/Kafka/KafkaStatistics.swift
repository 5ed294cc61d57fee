import Foundation
import Metrics

/// Turns librdkafka's periodic statistics (`statistics.interval.ms`, a JSON document) into
/// swift-metrics gauges, labelled by client:
///
/// - `kafka_client_queued_messages` — messages waiting in the client's queues (a producer's
///   backlog before delivery);
/// - `kafka_broker_rtt_seconds{broker}` — average request round trip per broker;
/// - `kafka_consumer_lag_messages{topic,partition}` — how far a consumer is behind the partition's
///   end, for each partition it owns.
///
/// Delivery latency is measured directly by `KafkaProducer` (`kafka_producer_delivery_seconds`).
final class KafkaStatistics: Sendable {
    private let client: String
    private let factory: any MetricsFactory

    init(client: String, factory: any MetricsFactory) {
        self.client = client
        self.factory = factory
    }

    func record(json: UnsafeRawBufferPointer) {
        guard let document = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else { return }
        record(document)
    }

    func record(_ document: [String: Any]) {
        if let queued = document["msg_cnt"] as? Int {
            Gauge(label: "kafka_client_queued_messages", dimensions: [("client", client)], factory: factory).record(queued)
        }
        for (name, broker) in (document["brokers"] as? [String: Any]) ?? [:] {
            guard let broker = broker as? [String: Any], broker["nodeid"] as? Int ?? -1 >= 0,
                let rtt = broker["rtt"] as? [String: Any], let average = rtt["avg"] as? Int, average > 0
            else { continue }
            Gauge(label: "kafka_broker_rtt_seconds", dimensions: [("client", client), ("broker", name)], factory: factory)
                .record(Double(average) / 1_000_000)
        }
        for (topicName, topic) in (document["topics"] as? [String: Any]) ?? [:] {
            guard let partitions = (topic as? [String: Any])?["partitions"] as? [String: Any] else { continue }
            for (partitionID, partition) in partitions where partitionID != "-1" {
                guard let lag = (partition as? [String: Any])?["consumer_lag"] as? Int, lag >= 0 else { continue }
                Gauge(
                    label: "kafka_consumer_lag_messages",
                    dimensions: [("client", client), ("topic", topicName), ("partition", partitionID)],
                    factory: factory
                )
                .record(lag)
            }
        }
    }
}
