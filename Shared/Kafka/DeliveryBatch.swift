import Metrics
import Synchronization

/// The delivery reports of one `KafkaProducer.send` call: librdkafka's delivery callback fills in
/// one result per record (on the poll thread) and the caller awaits them all with one continuation.
final class DeliveryBatch: Sendable {
    typealias Outcome = Result<KafkaDeliveryReport, KafkaDeliveryError>

    private struct State {
        var results: [Outcome?]
        var pending: Int
        var waiter: CheckedContinuation<[Outcome], Never>?
    }

    private let state: Mutex<State>
    private let metrics: DeliveryMetrics

    init(count: Int, metrics: DeliveryMetrics) {
        state = Mutex(State(results: Array(repeating: nil, count: count), pending: count, waiter: nil))
        self.metrics = metrics
    }

    /// Records the outcome of record `index`, delivered (or failed) `latency` after it was
    /// enqueued; resumes the waiter after the last one.
    func complete(_ index: Int, with outcome: Outcome, after latency: Duration?) {
        metrics.record(outcome, latency: latency)
        let finished: (CheckedContinuation<[Outcome], Never>, [Outcome])? = state.withLock { state in
            guard state.results[index] == nil else { return nil }
            state.results[index] = outcome
            state.pending -= 1
            guard state.pending == 0, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, state.results.compactMap { $0 })
        }
        if let (waiter, results) = finished { waiter.resume(returning: results) }
    }

    /// Every record's outcome, in the order the records were given, once all reports are in.
    func outcomes() async -> [Outcome] {
        await withCheckedContinuation { continuation in
            let results: [Outcome]? = state.withLock { state in
                guard state.pending == 0 else {
                    state.waiter = continuation
                    return nil
                }
                return state.results.compactMap { $0 }
            }
            if let results { continuation.resume(returning: results) }
        }
    }
}

/// What librdkafka carries for one record as its opaque pointer, handed back in its delivery report.
final class DeliveryTicket {
    let batch: DeliveryBatch
    let index: Int
    let enqueued: ContinuousClock.Instant

    init(batch: DeliveryBatch, index: Int) {
        self.batch = batch
        self.index = index
        self.enqueued = .now
    }
}

/// `kafka_producer_delivery_seconds` (enqueue to delivery report) and
/// `kafka_producer_records_total{result}` of one producer.
struct DeliveryMetrics: Sendable {
    private let latency: Metrics.Timer
    private let delivered: Counter
    private let failed: Counter

    init(client: String, factory: any MetricsFactory) {
        latency = Metrics.Timer(
            label: "kafka_producer_delivery_seconds",
            dimensions: [("client", client)],
            preferredDisplayUnit: .seconds,
            factory: factory
        )
        delivered = Counter(label: "kafka_producer_records_total", dimensions: [("client", client), ("result", "delivered")], factory: factory)
        failed = Counter(label: "kafka_producer_records_total", dimensions: [("client", client), ("result", "failed")], factory: factory)
    }

    func record(_ outcome: DeliveryBatch.Outcome, latency: Duration?) {
        switch outcome {
        case .success: delivered.increment()
        case .failure: failed.increment()
        }
        if let latency { self.latency.record(duration: latency) }
    }
}
