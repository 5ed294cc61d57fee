import CRdKafka
import Contracts
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// An idempotent Kafka producer (`enable.idempotence=true`, `acks=all`) over librdkafka.
///
/// `send` hands records to librdkafka and suspends until their delivery reports arrive; any number
/// of sends may be in flight, and no thread waits per record: one poll thread (started by `run()`)
/// serves every delivery report. Records with the same key go to the same partition in the order
/// they were sent. Run the producer as a `Service` before the services that send through it, so
/// that it shuts down after them: shutdown stops new sends, waits up to `flushTimeout` for records
/// in flight, and fails the rest with a retriable error.
public final class KafkaProducer: Service, Sendable {
    private let handle: RDKafkaHandle
    private let topicHandles = Mutex<[String: RDKafkaTopicHandle]>([:])
    private let closed = Atomic<Bool>(false)
    private let configuration: KafkaProducerConfiguration
    private let logger: Logger
    private let metrics: DeliveryMetrics

    /// - Throws: `KafkaError` when a property is invalid or librdkafka cannot create the client.
    public init(configuration: KafkaProducerConfiguration, logger: Logger, metricsFactory: (any MetricsFactory)? = nil) throws(KafkaError) {
        let factory = metricsFactory ?? MetricsSystem.factory
        let config = try RDKafkaConfig(configuration.librdkafkaProperties)
        rd_kafka_conf_set_dr_msg_cb(config.pointer) { _, message, _ in
            guard let message, let opaque = message.pointee._private else { return }
            let ticket = Unmanaged<DeliveryTicket>.fromOpaque(opaque).takeRetainedValue()
            let outcome: DeliveryBatch.Outcome
            if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                outcome = .success(
                    KafkaDeliveryReport(
                        topic: String(cString: rd_kafka_topic_name(message.pointee.rkt)),
                        partition: message.pointee.partition,
                        offset: message.pointee.offset
                    )
                )
            } else {
                outcome = .failure(KafkaDeliveryError(message.pointee.err))
            }
            ticket.batch.complete(ticket.index, with: outcome, after: ticket.enqueued.duration(to: .now))
        }
        let callbacks = RDKafkaCallbacks(
            logger: logger,
            statistics: KafkaStatistics(client: configuration.clientID, factory: factory)
        )
        self.handle = try RDKafkaHandle(RD_KAFKA_PRODUCER, config: config, callbacks: callbacks)
        self.configuration = configuration
        self.logger = logger
        self.metrics = DeliveryMetrics(client: configuration.clientID, factory: factory)
    }

    deinit {
        topicHandles.withLock { handles in handles.removeAll() }
    }

    /// Serves delivery reports until graceful shutdown or cancellation, then flushes.
    public func run() async throws {
        let handle = self.handle
        let flushTimeout = Int32(clamping: configuration.flushTimeout.wholeMilliseconds)
        let logger = self.logger
        let thread = PollThread(name: "kafka-producer") {
            rd_kafka_poll(handle.pointer, 100)
        } finish: {
            let left = rd_kafka_flush(handle.pointer, flushTimeout)
            if left != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.warning(
                    "Kafka producer stopped with records undelivered; failing them",
                    metadata: ["kafka.queued": "\(rd_kafka_outq_len(handle.pointer))"]
                )
                rd_kafka_purge(handle.pointer, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
                rd_kafka_poll(handle.pointer, 500)
            }
        }
        try? await gracefulShutdown()
        closed.store(true, ordering: .releasing)
        await thread.stop()
    }

    /// Sends one record and returns where it landed.
    /// - Throws: `KafkaDeliveryError`; `isRetriable` says whether sending it again may succeed.
    @discardableResult
    public func send(_ record: KafkaRecord) async throws(KafkaDeliveryError) -> KafkaDeliveryReport {
        try await send([record])[0].get()
    }

    /// Sends `records` (all enqueued at once, so they batch together) and returns each one's
    /// outcome in the same order. Records with the same key keep their relative order.
    public func send(_ records: [KafkaRecord]) async -> [Result<KafkaDeliveryReport, KafkaDeliveryError>] {
        guard !records.isEmpty else { return [] }
        let batch = DeliveryBatch(count: records.count, metrics: metrics)
        for (index, record) in records.enumerated() {
            await enqueue(record, index: index, batch: batch)
        }
        return await batch.outcomes()
    }

    /// Hands one record to librdkafka, waiting while its queue is full (the only back-pressure:
    /// `queue.buffering.max.messages`).
    private func enqueue(_ record: KafkaRecord, index: Int, batch: DeliveryBatch) async {
        let topic = topicHandle(record.topic)
        let ticket = Unmanaged.passRetained(DeliveryTicket(batch: batch, index: index)).toOpaque()
        while true {
            guard !closed.load(ordering: .acquiring) else { break }
            let error = topic.map { produce(record, topic: $0, opaque: ticket) } ?? RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC
            if error == RD_KAFKA_RESP_ERR_NO_ERROR { return }
            if error == RD_KAFKA_RESP_ERR__QUEUE_FULL, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(1))
                continue
            }
            Unmanaged<DeliveryTicket>.fromOpaque(ticket).release()
            batch.complete(index, with: .failure(KafkaDeliveryError(error)), after: nil)
            return
        }
        Unmanaged<DeliveryTicket>.fromOpaque(ticket).release()
        batch.complete(index, with: .failure(.producerClosed), after: nil)
    }

    private func produce(_ record: KafkaRecord, topic: RDKafkaTopicHandle, opaque: UnsafeMutableRawPointer) -> rd_kafka_resp_err_t {
        var headers: OpaquePointer? = nil
        if !record.headers.isEmpty {
            headers = rd_kafka_headers_new(record.headers.count)
            for header in record.headers {
                if let value = header.value {
                    value.withUnsafeBytes { bytes in
                        _ = rd_kafka_header_add(headers, header.name, -1, bytes.baseAddress, bytes.count)
                    }
                } else {
                    _ = rd_kafka_header_add(headers, header.name, -1, nil, 0)
                }
            }
        }
        let error: rd_kafka_resp_err_t = record.value.withUnsafeBytes { value in
            withKey(record.key) { key in
                // On the stack: this runs once per record.
                let count = headers == nil ? 6 : 7
                return withUnsafeTemporaryAllocation(of: rd_kafka_vu_t.self, capacity: count) { fields in
                    fields.initialize(repeating: rd_kafka_vu_t())
                    fields[0].vtype = RD_KAFKA_VTYPE_RKT
                    fields[0].u.rkt = topic.pointer
                    fields[1].vtype = RD_KAFKA_VTYPE_PARTITION
                    fields[1].u.i32 = record.partition ?? -1
                    fields[2].vtype = RD_KAFKA_VTYPE_VALUE
                    fields[2].u.mem.ptr = UnsafeMutableRawPointer(mutating: value.baseAddress)
                    fields[2].u.mem.size = value.count
                    fields[3].vtype = RD_KAFKA_VTYPE_KEY
                    fields[3].u.mem.ptr = UnsafeMutableRawPointer(mutating: key?.baseAddress)
                    fields[3].u.mem.size = key?.count ?? 0
                    fields[4].vtype = RD_KAFKA_VTYPE_OPAQUE
                    fields[4].u.ptr = opaque
                    fields[5].vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    fields[5].u.i = RD_KAFKA_MSG_F_COPY
                    if let headers {
                        fields[6].vtype = RD_KAFKA_VTYPE_HEADERS
                        fields[6].u.headers = headers
                    }
                    guard let error = rd_kafka_produceva(handle.pointer, fields.baseAddress, count) else {
                        return RD_KAFKA_RESP_ERR_NO_ERROR
                    }
                    defer { rd_kafka_error_destroy(error) }
                    return rd_kafka_error_code(error)
                }
            }
        }
        // On success librdkafka owns the headers; on failure they are still ours.
        if error != RD_KAFKA_RESP_ERR_NO_ERROR, let headers { rd_kafka_headers_destroy(headers) }
        return error
    }

    private func withKey<T>(_ key: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> T) -> T {
        guard let key else { return body(nil) }
        return key.withUnsafeBytes { body($0) }
    }

    private func topicHandle(_ name: String) -> RDKafkaTopicHandle? {
        topicHandles.withLock { handles in
            if let existing = handles[name] { return existing }
            guard let pointer = rd_kafka_topic_new(handle.pointer, name, nil) else { return nil }
            let created = RDKafkaTopicHandle(pointer: pointer, client: handle)
            handles[name] = created
            return created
        }
    }

    /// Asks the cluster for its metadata (a round trip to one broker), for readiness probes.
    /// - Throws: `KafkaError.unreachable` when no broker answers within `timeout`.
    public func checkConnection(timeout: Duration) async throws(KafkaError) {
        try await handle.checkConnection(timeout: timeout)
    }
}

/// An `rd_kafka_topic_t`, destroyed before its client.
final class RDKafkaTopicHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    private let client: RDKafkaHandle

    init(pointer: OpaquePointer, client: RDKafkaHandle) {
        self.pointer = pointer
        self.client = client
    }

    deinit { rd_kafka_topic_destroy(pointer) }
}
