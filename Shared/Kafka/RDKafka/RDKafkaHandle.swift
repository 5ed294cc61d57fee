import CRdKafka
import Logging

/// One `rd_kafka_t` (a producer or a consumer) and the state its C callbacks reach through the
/// handle's opaque pointer.
///
/// Sendable because librdkafka's handle is thread-safe: every public function may be called from
/// any thread (rdkafka.h, "Threads and callbacks"). The handle is destroyed only in `deinit`, after
/// every thread that polls it has stopped, so no callback can outlive `callbacks`.
final class RDKafkaHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let callbacks: RDKafkaCallbacks

    /// Creates a handle of `type` from `config` (which the handle then owns).
    /// - Throws: `KafkaError.clientCreation` with librdkafka's reason.
    init(_ type: rd_kafka_type_t, config: RDKafkaConfig, callbacks: RDKafkaCallbacks) throws(KafkaError) {
        let configPointer = config.pointer
        rd_kafka_conf_set_opaque(configPointer, Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_log_cb(configPointer) { handle, level, facility, message in
            guard let callbacks = RDKafkaCallbacks.of(handle) else { return }
            callbacks.log(level: level, facility: facility.map { String(cString: $0) } ?? "", message: message.map { String(cString: $0) } ?? "")
        }
        rd_kafka_conf_set_error_cb(configPointer) { handle, code, reason, _ in
            guard let callbacks = RDKafkaCallbacks.of(handle) else { return }
            callbacks.clientError(code: rd_kafka_resp_err_t(code), reason: reason.map { String(cString: $0) } ?? "")
        }
        rd_kafka_conf_set_stats_cb(configPointer) { handle, json, length, _ in
            guard let callbacks = RDKafkaCallbacks.of(handle), let json else { return 0 }
            callbacks.statistics?.record(json: UnsafeRawBufferPointer(start: json, count: length))
            return 0  // librdkafka frees the JSON buffer
        }
        if callbacks.rebalance != nil {
            rd_kafka_conf_set_rebalance_cb(configPointer) { handle, code, partitions, _ in
                guard let handle, let partitions, let callbacks = RDKafkaCallbacks.of(handle) else { return }
                callbacks.rebalance?.rebalance(handle: handle, code: code, partitions: partitions)
            }
        }
        var errorText = ErrorText()
        guard let pointer = rd_kafka_new(type, config.release(), &errorText.buffer, errorText.buffer.count) else {
            throw KafkaError.clientCreation(reason: errorText.message)
        }
        self.pointer = pointer
        self.callbacks = callbacks
    }

    deinit {
        // A consumer leaves its group in `KafkaConsumer.run()`, within its close timeout; if that
        // gave up, leaving again here would block without one.
        rd_kafka_destroy_flags(pointer, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE)
    }
}

/// What a consumer does when its group assigns or revokes partitions; called on the poll thread.
protocol RDKafkaRebalanceHandling: AnyObject, Sendable {
    func rebalance(handle: OpaquePointer, code: rd_kafka_resp_err_t, partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>)
}

/// The Swift side of a handle's C callbacks: its logger, its statistics and its rebalance handler.
final class RDKafkaCallbacks: Sendable {
    let logger: Logger
    let statistics: KafkaStatistics?
    let rebalance: (any RDKafkaRebalanceHandling)?

    init(logger: Logger, statistics: KafkaStatistics?, rebalance: (any RDKafkaRebalanceHandling)? = nil) {
        self.logger = logger
        self.statistics = statistics
        self.rebalance = rebalance
    }

    static func of(_ handle: OpaquePointer?) -> RDKafkaCallbacks? {
        guard let handle, let opaque = rd_kafka_opaque(handle) else { return nil }
        return Unmanaged<RDKafkaCallbacks>.fromOpaque(opaque).takeUnretainedValue()
    }

    /// librdkafka's syslog levels mapped onto swift-log's.
    func log(level: Int32, facility: String, message: String) {
        let swiftLevel: Logger.Level =
            switch level {
            case ...2: .critical
            case 3: .error
            case 4: .warning
            case 5: .notice
            case 6: .info
            default: .debug
            }
        logger.log(level: swiftLevel, "\(message)", metadata: ["kafka.facility": "\(facility)"])
    }

    func clientError(code: rd_kafka_resp_err_t, reason: String) {
        // Transport errors and "all brokers down" are retried by librdkafka itself; they matter
        // to an operator but are not failures of a send.
        let level: Logger.Level = code == RD_KAFKA_RESP_ERR__FATAL ? .critical : .warning
        logger.log(level: level, "Kafka client error: \(reason)", metadata: ["kafka.error": "\(String(cString: rd_kafka_err2name(code)))"])
    }
}
