import Metrics
import ServiceKit
import Synchronization

/// The realtime figures on `/metrics`:
/// - `realtime_connections{transport}`: open WebSocket and SSE connections;
/// - `realtime_events_pushed_total{transport}`: events written to clients;
/// - `realtime_events_dropped_total{reason}`: positions dropped for slow clients (`superseded`
///   by a newer one, or `buffer_full`);
/// - `realtime_disconnects_total{transport,reason}`: why connections ended;
/// - `realtime_delivery_seconds`: from reading an event off Kafka to writing it to a client.
struct RealtimeMetrics: Sendable {
    private final class Counts: Sendable {
        let open = Mutex<[String: Int]>([:])
    }

    private let counts = Counts()
    /// The service's own registry (also the process-wide one in production; tests run several
    /// gateways in one process).
    let factory: any MetricsFactory

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    func connected(_ transport: String) {
        let open = counts.open.withLock { open in
            open[transport, default: 0] += 1
            return open[transport]!
        }
        Gauge(label: "realtime_connections", dimensions: [("transport", transport)], factory: factory).record(open)
    }

    func disconnected(_ transport: String, reason: String) {
        let open = counts.open.withLock { open in
            open[transport, default: 0] -= 1
            return open[transport]!
        }
        Gauge(label: "realtime_connections", dimensions: [("transport", transport)], factory: factory).record(open)
        Counter(label: "realtime_disconnects_total", dimensions: [("transport", transport), ("reason", reason)], factory: factory).increment()
    }

    func offered(_ offer: ClientQueue.Offer, transport: String) {
        switch offer {
        case .queuedDroppingOlder:
            Counter(label: "realtime_events_dropped_total", dimensions: [("reason", "superseded")], factory: factory).increment()
        case .dropped:
            Counter(label: "realtime_events_dropped_total", dimensions: [("reason", "buffer_full")], factory: factory).increment()
        case .queued, .overflowed, .closed:
            break
        }
    }

    func pushed(_ transport: String, after latency: Duration) {
        Counter(label: "realtime_events_pushed_total", dimensions: [("transport", transport)], factory: factory).increment()
        Timer(label: "realtime_delivery_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory).recordNanoseconds(latency.totalNanoseconds)
    }
}
