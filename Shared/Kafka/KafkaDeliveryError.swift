import CRdKafka

/// Why a record was not delivered. `isRetriable` says whether sending the same record again may
/// succeed (a timeout, brokers down, a leader election) or cannot (the record is too large, the
/// topic does not exist, access is denied, the producer is closed).
public struct KafkaDeliveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// librdkafka's error name, such as `_MSG_TIMED_OUT` or `MSG_SIZE_TOO_LARGE`.
    public var code: String
    public var message: String
    public var isRetriable: Bool

    public init(code: String, message: String, isRetriable: Bool) {
        self.code = code
        self.message = message
        self.isRetriable = isRetriable
    }

    init(_ error: rd_kafka_resp_err_t) {
        self.init(
            code: String(cString: rd_kafka_err2name(error)),
            message: String(cString: rd_kafka_err2str(error)),
            isRetriable: Self.retriable.contains(error.rawValue)
        )
    }

    /// Sends after `KafkaProducer` shut down.
    public static let producerClosed = KafkaDeliveryError(code: "_DESTROY", message: "the producer is shut down", isRetriable: false)

    public var description: String { "\(code): \(message)" }

    /// Errors that end a delivery but leave the next attempt a chance. With idempotence on,
    /// librdkafka already retries everything transient until `message.timeout.ms`, so what reaches
    /// a delivery report is mostly the timeout itself or the broker state behind it.
    private static let retriable: Set<Int32> = [
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT,
        RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__PURGE_QUEUE,
        RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
        RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR__OUTDATED,
    ].map(\.rawValue).reduce(into: []) { $0.insert($1) }
}
