import AsyncSignals
import CRdKafka
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// A member of a Kafka consumer group, over librdkafka.
///
/// The partitions the group assigns to this member arrive on `partitions`, each an `AsyncSequence`
/// of its messages: handle each partition in its own task and partitions are processed
/// concurrently, one message at a time within each (so in order per key). Offsets are stored only
/// through `KafkaPartition.markProcessed(_:)` — at-least-once delivery — and committed every
/// `commitInterval` and, synchronously, before a partition is revoked. Assignment is
/// cooperative-sticky where librdkafka allows it (see
/// `KafkaConsumerConfiguration.assignmentStrategy`), eager round-robin otherwise.
///
/// `run()` (a `Service`) owns the poll thread; on graceful shutdown it leaves the group, which
/// revokes every partition (ending their sequences) after committing what was processed. Leaving
/// takes at most `closeTimeout`, even with the brokers gone or a handler that never returns.
public final class KafkaConsumer: Service, Sendable {
    /// Partitions as they are assigned. Ends when the consumer stops.
    public let partitions: AsyncStream<KafkaPartition>

    private let handle: RDKafkaHandle
    private let assignments: PartitionAssignments
    private let closeTimeout: Duration
    private let logger: Logger

    /// Creates the client and subscribes to `configuration.topics`; the group is joined once
    /// `run()` polls.
    /// - Throws: `KafkaError` for an invalid property or a failed subscription.
    public init(configuration: KafkaConsumerConfiguration, logger: Logger, metricsFactory: (any MetricsFactory)? = nil) throws(KafkaError) {
        let (stream, continuation) = AsyncStream.makeStream(of: KafkaPartition.self)
        let assignments = PartitionAssignments(
            newPartitions: continuation,
            capacity: configuration.bufferedMessagesPerPartition,
            // The group stops hearing from a member that is still revoking; stay well inside it.
            drainTimeout: min(configuration.revocationDrainTimeout, configuration.sessionTimeout / 2),
            commitTimeout: min(.seconds(5), configuration.sessionTimeout / 3),
            stopsAtEnd: configuration.stopsAtEnd,
            startsAtEndOnAssignment: !configuration.commitsOffsets && configuration.startAt == .latest,
            logger: logger
        )
        let config = try RDKafkaConfig(configuration.librdkafkaProperties)
        let callbacks = RDKafkaCallbacks(
            logger: logger,
            statistics: KafkaStatistics(client: configuration.clientID, factory: metricsFactory ?? MetricsSystem.factory),
            rebalance: assignments
        )
        let handle = try RDKafkaHandle(RD_KAFKA_CONSUMER, config: config, callbacks: callbacks)
        self.closeTimeout = configuration.closeTimeout
        assignments.attach(handle)
        rd_kafka_poll_set_consumer(handle.pointer)
        let topics = RDKafkaPartitionList(configuration.topics.map { ($0, RD_KAFKA_PARTITION_UA, nil) })
        let error = rd_kafka_subscribe(handle.pointer, topics.pointer)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.configuration(key: "topics", reason: String(cString: rd_kafka_err2str(error)))
        }
        self.partitions = stream
        self.handle = handle
        self.assignments = assignments
        self.logger = logger
    }

    deinit {
        assignments.detach()
    }

    /// Polls until graceful shutdown, cancellation or — with `stopsAtEnd` — the end of every
    /// assigned partition; then leaves the group, within `closeTimeout`.
    /// The partitions this consumer owns now (its group assigned them and has not revoked them),
    /// by topic and number.
    public var assignment: [(topic: String, partition: Int32)] {
        assignments.ownedPartitions()
    }

    public func run() async throws {
        let handle = self.handle
        let assignments = self.assignments
        let closeTimeout = self.closeTimeout
        let thread = PollThread(name: "kafka-consumer") {
            guard let message = rd_kafka_consumer_poll(handle.pointer, 100) else { return }
            defer { rd_kafka_message_destroy(message) }
            assignments.deliver(message)
        } finish: {
            assignments.leaveGroup(handle.pointer, within: closeTimeout)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await gracefulShutdown() }
            group.addTask { await assignments.allEnded.value() }
            await group.next()
            group.cancelAll()
            assignments.allEnded.complete(())
        }
        await thread.stop()
    }
}

/// The partitions a consumer owns: routes fetched messages to them, pauses and resumes them, and
/// answers the group's assignments and revocations (on the poll thread).
final class PartitionAssignments: RDKafkaRebalanceHandling, PartitionFlowControl {
    private struct Key: Hashable {
        var topic: String
        var partition: Int32
    }

    let logger: Logger
    let allEnded = OneShot<Void>()
    private let newPartitions: AsyncStream<KafkaPartition>.Continuation
    private let capacity: Int
    private let drainTimeout: Duration
    private let commitTimeout: Duration
    private let stopsAtEnd: Bool
    /// A consumer that commits nothing and starts at the latest offset reads each partition from
    /// its end as of the assignment: resolved before the partition is handed out, so a record
    /// produced after that is never skipped (`auto.offset.reset` would resolve it later, racing
    /// with producers).
    private let startsAtEndOnAssignment: Bool
    /// Set when the consumer starts leaving its group: revocation work must end by then, and
    /// waiting for handlers leaves `commitReserve` of it for the final commit.
    private let leaving = Mutex<(deadline: ContinuousClock.Instant, commitReserve: Duration)?>(nil)
    private let owned = Mutex<[Key: KafkaPartition]>([:])
    private let endedPartitions = Mutex<Set<Key>>([])
    private let handle = Mutex<RDKafkaHandle?>(nil)

    init(
        newPartitions: AsyncStream<KafkaPartition>.Continuation,
        capacity: Int,
        drainTimeout: Duration,
        commitTimeout: Duration,
        stopsAtEnd: Bool,
        startsAtEndOnAssignment: Bool = false,
        logger: Logger
    ) {
        self.startsAtEndOnAssignment = startsAtEndOnAssignment
        self.newPartitions = newPartitions
        self.capacity = capacity
        self.drainTimeout = drainTimeout
        self.commitTimeout = commitTimeout
        self.stopsAtEnd = stopsAtEnd
        self.logger = logger
    }

    /// Called once, right after the handle exists. The handle also holds us (through its
    /// callbacks), so `detach()` breaks the cycle when the consumer stops or goes away; after it,
    /// flow-control calls from partitions still being iterated do nothing.
    func ownedPartitions() -> [(topic: String, partition: Int32)] {
        owned.withLock { $0.keys.map { ($0.topic, $0.partition) } }.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
    }

    func attach(_ handle: RDKafkaHandle) {
        self.handle.withLock { $0 = handle }
    }

    func detach() {
        handle.withLock { $0 = nil }
    }

    private var pointer: OpaquePointer? { handle.withLock { $0?.pointer } }

    /// Routes one polled message (or error event) to its partition.
    func deliver(_ message: UnsafeMutablePointer<rd_kafka_message_t>) {
        let error = message.pointee.err
        if error == RD_KAFKA_RESP_ERR__PARTITION_EOF {
            reachedEnd(Key(topic: String(cString: rd_kafka_topic_name(message.pointee.rkt)), partition: message.pointee.partition))
            return
        }
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            logger.warning("Kafka consumer error", metadata: ["kafka.error": "\(String(cString: rd_kafka_err2str(error)))"])
            return
        }
        let consumed = KafkaMessage(copying: message)
        let partition = owned.withLock { $0[Key(topic: consumed.topic, partition: consumed.partition)] }
        partition?.append(consumed)
    }

    private func reachedEnd(_ key: Key) {
        guard stopsAtEnd, let partition = owned.withLock({ $0[key] }) else { return }
        partition.end(discardingBuffered: false)
        let ownedKeys = owned.withLock { Set($0.keys) }
        let allDone = endedPartitions.withLock { ended in
            ended.insert(key)
            return ownedKeys.isSubset(of: ended)
        }
        if allDone { allEnded.complete(()) }
    }

    /// Leaves the group (revoking every partition, which commits what was processed) and then
    /// ends every sequence. Runs on the poll thread, which serves the leave's rebalance events;
    /// gives up after `timeout` — a group it cannot reach, a handler that does not finish — and
    /// the next owner of the partitions reads again from the last commit.
    func leaveGroup(_ handle: OpaquePointer, within timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        leaving.withLock { $0 = (deadline, min(commitTimeout, timeout / 3)) }
        let queue = rd_kafka_queue_new(handle)
        defer {
            rd_kafka_queue_destroy(queue)
            finish()
        }
        if let error = rd_kafka_consumer_close_queue(handle, queue) {
            logger.warning("Kafka consumer could not leave its group", metadata: ["kafka.error": "\(String(cString: rd_kafka_error_string(error)))"])
            rd_kafka_error_destroy(error)
            return
        }
        while rd_kafka_consumer_closed(handle) == 0 {
            guard ContinuousClock.now < deadline else {
                logger.warning(
                    "Kafka consumer did not leave its group in time; its partitions will be read again from the last commit",
                    metadata: ["kafka.close_timeout": "\(timeout)"]
                )
                return
            }
            guard let event = rd_kafka_queue_poll(queue, 100) else { continue }
            defer { rd_kafka_event_destroy(event) }
            // Messages still arriving are dropped: they were not processed, so not committed.
            if rd_kafka_event_type(event) == RD_KAFKA_EVENT_REBALANCE, let partitions = rd_kafka_event_topic_partition_list(event) {
                rebalance(handle: handle, code: rd_kafka_event_error(event), partitions: partitions)
            }
        }
    }

    /// The time left before `deadline` and, if the consumer is leaving, before the leave's
    /// deadline (less the commit's reserve when `reservingCommit`).
    private func remaining(until deadline: ContinuousClock.Instant, reservingCommit: Bool = false) -> Duration {
        let end = leaving.withLock { leaving in
            leaving.map { min($0.deadline - (reservingCommit ? $0.commitReserve : .zero), deadline) } ?? deadline
        }
        return max(.zero, end - .now)
    }

    /// The consumer has left its group: end every sequence, then the stream of partitions.
    private func finish() {
        let remaining = owned.withLock { owned in
            defer { owned.removeAll() }
            return Array(owned.values)
        }
        for partition in remaining { partition.end(discardingBuffered: true) }
        newPartitions.finish()
        detach()
    }

    func rebalance(handle: OpaquePointer, code: rd_kafka_resp_err_t, partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        let cooperative = String(cString: rd_kafka_rebalance_protocol(handle)) == "COOPERATIVE"
        let entries = RDKafkaPartitionList.entries(of: partitions)
        if code == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS {
            let created = entries.map { KafkaPartition(topic: $0.topic, partition: $0.partition, capacity: capacity, flowControl: self) }
            owned.withLock { owned in
                for partition in created { owned[Key(topic: partition.topic, partition: partition.partition)] = partition }
            }
            if startsAtEndOnAssignment { positionAtEnd(handle, partitions) }
            logger.info("Kafka partitions assigned", metadata: ["kafka.partitions": "\(describe(entries))"])
            if cooperative {
                if let error = rd_kafka_incremental_assign(handle, partitions) { rd_kafka_error_destroy(error) }
            } else {
                rd_kafka_assign(handle, partitions)
            }
            for partition in created { newPartitions.yield(partition) }
        } else {
            let revoked = owned.withLock { owned in
                entries.compactMap { owned.removeValue(forKey: Key(topic: $0.topic, partition: $0.partition)) }
            }
            for partition in revoked { partition.end(discardingBuffered: true) }
            let lost = rd_kafka_assignment_lost(handle) != 0
            if !lost {
                waitForHandlers(of: revoked)
                commitBeforeRevocation(handle)
            }
            logger.info(lost ? "Kafka partitions lost" : "Kafka partitions revoked", metadata: ["kafka.partitions": "\(describe(entries))"])
            if cooperative {
                if let error = rd_kafka_incremental_unassign(handle, partitions) { rd_kafka_error_destroy(error) }
            } else {
                rd_kafka_assign(handle, nil)
            }
        }
    }

    /// Sets each partition's start to its current end: one ListOffsets round per leader for the
    /// whole assignment (a timestamp of `RD_KAFKA_OFFSET_END` asks for the latest offset). If the
    /// brokers do not answer, the partitions fall back to `auto.offset.reset`.
    private func positionAtEnd(_ handle: OpaquePointer, _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        let elements = UnsafeMutableBufferPointer(start: partitions.pointee.elems, count: Int(partitions.pointee.cnt))
        for index in elements.indices { elements[index].offset = Int64(RD_KAFKA_OFFSET_END) }
        let error = rd_kafka_offsets_for_times(handle, partitions, 5_000)
        guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
            logger.warning(
                "Could not ask where the assigned partitions end; reading from auto.offset.reset",
                metadata: ["kafka.error": "\(String(cString: rd_kafka_err2str(error)))"]
            )
            for index in elements.indices { elements[index].offset = Int64(RD_KAFKA_OFFSET_INVALID) }
            return
        }
        for index in elements.indices where elements[index].err != RD_KAFKA_RESP_ERR_NO_ERROR {
            elements[index].offset = Int64(RD_KAFKA_OFFSET_INVALID)
        }
    }

    /// Blocks the poll thread (never a Swift task) until the revoked partitions' current messages
    /// are handled, or `drainTimeout` passes; an unfinished message is then redelivered to the
    /// partition's next owner.
    private func waitForHandlers(of partitions: [KafkaPartition]) {
        let deadline = ContinuousClock.now + remaining(until: .now + drainTimeout, reservingCommit: true)
        while partitions.contains(where: \.isHandlingMessage), ContinuousClock.now < deadline {
            usleep(1_000)
        }
    }

    /// Commits what was processed while the partitions are still ours, waiting at most
    /// `commitTimeout` for the group's answer: a commit waiting for a coordinator that is gone
    /// would otherwise hold the revocation, and the consumer, forever.
    private func commitBeforeRevocation(_ handle: OpaquePointer) {
        let queue = rd_kafka_queue_new(handle)
        defer { rd_kafka_queue_destroy(queue) }
        var error = rd_kafka_commit_queue(handle, nil, queue, nil, nil)
        if error == RD_KAFKA_RESP_ERR_NO_ERROR {
            let wait = remaining(until: .now + commitTimeout)
            guard let event = rd_kafka_queue_poll(queue, Int32(wait.wholeMilliseconds)) else {
                logger.warning(
                    "Kafka commit before revocation timed out; the partitions' next owner may see processed events again",
                    metadata: ["kafka.commit_timeout": "\(wait)"]
                )
                return
            }
            error = rd_kafka_event_error(event)
            rd_kafka_event_destroy(event)
        }
        // "No offset" just means nothing new was stored.
        if error != RD_KAFKA_RESP_ERR_NO_ERROR, error != RD_KAFKA_RESP_ERR__NO_OFFSET {
            logger.warning("Kafka commit before revocation failed", metadata: ["kafka.error": "\(String(cString: rd_kafka_err2str(error)))"])
        }
    }

    private func describe(_ entries: [(topic: String, partition: Int32)]) -> String {
        entries.map { "\($0.topic)[\($0.partition)]" }.joined(separator: ",")
    }

    // MARK: PartitionFlowControl

    func pause(topic: String, partition: Int32) {
        guard let pointer else { return }
        let list = RDKafkaPartitionList([(topic, partition, nil)])
        rd_kafka_pause_partitions(pointer, list.pointer)
    }

    func resume(topic: String, partition: Int32) {
        guard let pointer else { return }
        let list = RDKafkaPartitionList([(topic, partition, nil)])
        rd_kafka_resume_partitions(pointer, list.pointer)
    }

    func storeOffset(topic: String, partition: Int32, nextOffset: Int64) {
        guard let pointer else { return }
        let list = RDKafkaPartitionList([(topic, partition, nextOffset)])
        // Fails only when the partition was revoked meanwhile; its next owner sees it again.
        rd_kafka_offsets_store(pointer, list.pointer)
    }
}
