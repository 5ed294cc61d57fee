import Synchronization

/// One partition this consumer owns, from assignment until revocation: an `AsyncSequence` of its
/// messages in offset order.
///
/// Iterate it from one task and call `markProcessed(_:)` after a message's handler succeeded; the
/// offset is stored (and later committed) only then, so a message whose handler did not finish is
/// delivered again — to this consumer or to the next owner of the partition. The sequence ends
/// when the partition is revoked or the consumer stops. The buffer behind it is bounded: when it
/// fills up the partition is paused, and it resumes once the handler has worked through half.
public final class KafkaPartition: AsyncSequence, Sendable {
    public typealias Element = KafkaMessage

    public let topic: String
    public let partition: Int32

    private struct State {
        var buffer: [KafkaMessage] = []
        var head = 0
        var paused = false
        var inFlight = false
        var ended = false
        var cancelled = false
        var waiter: CheckedContinuation<KafkaMessage?, Never>?

        var count: Int { buffer.count - head }

        mutating func popFirst() -> KafkaMessage? {
            guard head < buffer.count else { return nil }
            let message = buffer[head]
            head += 1
            if head > 64, head * 2 > buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return message
        }
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let flowControl: any PartitionFlowControl

    init(topic: String, partition: Int32, capacity: Int, flowControl: any PartitionFlowControl) {
        self.topic = topic
        self.partition = partition
        self.capacity = Swift.max(2, capacity)
        self.flowControl = flowControl
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let partition: KafkaPartition

        public mutating func next() async -> KafkaMessage? {
            await partition.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(partition: self)
    }

    /// Stores `message`'s offset as processed, to be committed with the next commit. Call it only
    /// after the message's effects are durable.
    public func markProcessed(_ message: KafkaMessage) {
        state.withLock { $0.inFlight = false }
        flowControl.storeOffset(topic: topic, partition: partition, nextOffset: message.offset + 1)
    }

    /// The next message; `nil` once the partition is revoked, the consumer stopped, or the
    /// iterating task is cancelled.
    private func next() async -> KafkaMessage? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                enum Step {
                    case deliver(KafkaMessage?)
                    case wait
                }
                let step: Step = state.withLock { state in
                    state.inFlight = false
                    if state.cancelled {
                        state.cancelled = false
                        return .deliver(nil)
                    }
                    if let message = state.popFirst() {
                        state.inFlight = true
                        if state.paused, state.count <= capacity / 2 {
                            // Inside the lock, so librdkafka sees pauses and resumes in the
                            // order we decided them.
                            state.paused = false
                            flowControl.resume(topic: topic, partition: partition)
                        }
                        return .deliver(message)
                    }
                    if state.ended { return .deliver(nil) }
                    state.waiter = continuation
                    return .wait
                }
                if case .deliver(let message) = step {
                    continuation.resume(returning: message)
                }
            }
        } onCancel: {
            let waiter: CheckedContinuation<KafkaMessage?, Never>? = state.withLock { state in
                guard let waiter = state.waiter else {
                    state.cancelled = true
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    // MARK: Called by the consumer's poll thread

    /// Adds a fetched message; pauses the partition when the buffer is full.
    func append(_ message: KafkaMessage) {
        let waiter: CheckedContinuation<KafkaMessage?, Never>? = state.withLock { state in
            guard !state.ended else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                state.inFlight = true
                return waiter
            }
            state.buffer.append(message)
            if !state.paused, state.count >= capacity {
                state.paused = true
                flowControl.pause(topic: topic, partition: partition)
            }
            return nil
        }
        waiter?.resume(returning: message)
    }

    /// Ends the sequence. When `discardingBuffered`, messages not yet handed out are dropped (the
    /// partition's next owner reads them again); otherwise the sequence ends after them.
    func end(discardingBuffered: Bool) {
        let waiter: CheckedContinuation<KafkaMessage?, Never>? = state.withLock { state in
            state.ended = true
            if discardingBuffered {
                state.buffer.removeAll()
                state.head = 0
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Messages fetched and not yet handed out.
    package var bufferedCount: Int { state.withLock { $0.count } }

    /// Whether a message has been handed out and its handler has not yet finished.
    var isHandlingMessage: Bool { state.withLock { $0.inFlight } }
}

/// What a partition asks of its consumer.
protocol PartitionFlowControl: Sendable {
    func pause(topic: String, partition: Int32)
    func resume(topic: String, partition: Int32)
    func storeOffset(topic: String, partition: Int32, nextOffset: Int64)
}
