import CRdKafka
import Contracts
import Logging

/// Creates topics on a real Kafka cluster (the CreateTopics admin request).
public enum KafkaTopicAdministrator {
    /// Makes sure each of `topics` exists, with its partition count, retention and cleanup policy;
    /// topics that already exist are left as they are. Services call this at start-up for the
    /// topics they publish to, so a fresh cluster needs no manual step.
    ///
    /// A broker that does not implement CreateTopics (the embedded broker, which creates the
    /// catalog's topics itself) is logged and accepted.
    /// - Throws: `KafkaError.administration` naming the topics the cluster refused, or
    ///   `KafkaError.unreachable` when no answer came within `timeout`.
    public static func ensureTopicsExist(
        _ topics: [Topic],
        bootstrapServers: String,
        timeout: Duration = .seconds(30),
        logger: Logger
    ) async throws(KafkaError) {
        guard !topics.isEmpty else { return }
        let config = try RDKafkaConfig(["bootstrap.servers": bootstrapServers, "log.connection.close": "false"])
        let handle = try RDKafkaHandle(RD_KAFKA_PRODUCER, config: config, callbacks: RDKafkaCallbacks(logger: logger, statistics: nil))
        let milliseconds = Int32(clamping: timeout.wholeMilliseconds)
        let outcome: Result<[(String, rd_kafka_resp_err_t, String)], KafkaError> = await RDKafkaHandle.blocking {
            createTopics(topics, handle: handle, milliseconds: milliseconds)
        }
        let results = try outcome.get()
        var refused: [String] = []
        for (name, error, reason) in results {
            switch error {
            case RD_KAFKA_RESP_ERR_NO_ERROR:
                logger.info("Kafka topic created", metadata: ["kafka.topic": "\(name)"])
            case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
                break
            case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE, RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION, RD_KAFKA_RESP_ERR_INVALID_REQUEST:
                logger.info("Kafka broker does not create topics on request; relying on it to have them", metadata: ["kafka.topic": "\(name)"])
            default:
                refused.append("\(name) (\(reason))")
            }
        }
        guard refused.isEmpty else {
            throw KafkaError.administration(reason: "could not create \(refused.joined(separator: ", "))")
        }
    }

    private static func createTopics(
        _ topics: [Topic],
        handle: RDKafkaHandle,
        milliseconds: Int32
    ) -> Result<[(String, rd_kafka_resp_err_t, String)], KafkaError> {
        var errorText = ErrorText()
        var newTopics: [OpaquePointer?] = []
        defer { rd_kafka_NewTopic_destroy_array(&newTopics, newTopics.count) }
        for topic in topics {
            guard let newTopic = rd_kafka_NewTopic_new(topic.name, Int32(topic.partitions), -1, &errorText.buffer, errorText.buffer.count) else {
                return .failure(.administration(reason: "\(topic.name): \(errorText.message)"))
            }
            rd_kafka_NewTopic_set_config(newTopic, "retention.ms", "\(topic.retentionMilliseconds)")
            rd_kafka_NewTopic_set_config(newTopic, "cleanup.policy", topic.cleanupPolicy.rawValue)
            newTopics.append(newTopic)
        }
        let options = rd_kafka_AdminOptions_new(handle.pointer, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        rd_kafka_AdminOptions_set_operation_timeout(options, milliseconds, &errorText.buffer, errorText.buffer.count)
        rd_kafka_AdminOptions_set_request_timeout(options, milliseconds, &errorText.buffer, errorText.buffer.count)
        let queue = rd_kafka_queue_new(handle.pointer)
        defer { rd_kafka_queue_destroy(queue) }
        rd_kafka_CreateTopics(handle.pointer, &newTopics, newTopics.count, options, queue)
        guard let event = rd_kafka_queue_poll(queue, milliseconds + 1_000) else {
            return .failure(.unreachable(reason: "CreateTopics got no answer"))
        }
        defer { rd_kafka_event_destroy(event) }
        let eventError = rd_kafka_event_error(event)
        if eventError != RD_KAFKA_RESP_ERR_NO_ERROR {
            // A request the broker does not support fails as a whole.
            let reason = String(cString: rd_kafka_event_error_string(event))
            return .success(topics.map { ($0.name, eventError, reason) })
        }
        var count = 0
        guard let result = rd_kafka_event_CreateTopics_result(event),
            let topicResults = rd_kafka_CreateTopics_result_topics(result, &count)
        else {
            return .failure(.administration(reason: "CreateTopics returned no result"))
        }
        return .success(
            (0..<count).compactMap { index in
                guard let topicResult = topicResults[index] else { return nil }
                let reason = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? ""
                return (String(cString: rd_kafka_topic_result_name(topicResult)), rd_kafka_topic_result_error(topicResult), reason)
            }
        )
    }
}
