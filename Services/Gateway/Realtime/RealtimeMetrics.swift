import Metrics
import RealtimeWire
import ServiceKit
import Synchronization

/// The realtime figures on `/metrics`:
/// - `realtime_connections{transport}`: open connections: `websocket` (`/v1/realtime`), `sse` and
///   `supabase` (`/realtime/v1/websocket`);
/// - `realtime_events_pushed_total{transport}`: events written to clients;
/// - `realtime_events_dropped_total{reason}`: positions dropped for slow clients (`superseded`
///   by a newer one, or `buffer_full`);
/// - `realtime_disconnects_total{transport,reason}`: why connections ended;
/// - `realtime_delivery_seconds`: from reading an event off Kafka to writing it to a client.
///
/// The metrics an event touches are made once, not looked up in the registry per event and client.
final class RealtimeMetrics: Sendable {
    /// How a realtime client is connected, as `/metrics` labels it.
    enum Transport: String, CaseIterable, Sendable {
        /// `/v1/realtime`.
        case websocket
        /// `/v1/events`.
        case sse
        /// `/realtime/v1/websocket`.
        case supabase
    }

    private final class PerTransport: Sendable {
        let open = Atomic<Int>(0)
        let connections: Gauge
        let pushed: Counter

        init(connections: Gauge, pushed: Counter) {
            self.connections = connections
            self.pushed = pushed
        }
    }

    /// The service's own registry (also the process-wide one in production; tests run several
    /// gateways in one process).
    let factory: any MetricsFactory
    private let perTransport: [Transport: PerTransport]
    private let superseded: Counter
    private let bufferFull: Counter
    private let delivery: Timer

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        perTransport = Dictionary(
            uniqueKeysWithValues: Transport.allCases.map { transport in
                (
                    transport,
                    PerTransport(
                        connections: Gauge(label: "realtime_connections", dimensions: [("transport", transport.rawValue)], factory: factory),
                        pushed: Counter(label: "realtime_events_pushed_total", dimensions: [("transport", transport.rawValue)], factory: factory)
                    )
                )
            }
        )
        superseded = Counter(label: "realtime_events_dropped_total", dimensions: [("reason", "superseded")], factory: factory)
        bufferFull = Counter(label: "realtime_events_dropped_total", dimensions: [("reason", "buffer_full")], factory: factory)
        delivery = Timer(label: "realtime_delivery_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
    }

    func connected(_ transport: Transport) {
        guard let metrics = perTransport[transport] else { return }
        metrics.connections.record(metrics.open.add(1, ordering: .relaxed).newValue)
    }

    func disconnected(_ transport: Transport, reason: String) {
        guard let metrics = perTransport[transport] else { return }
        metrics.connections.record(metrics.open.subtract(1, ordering: .relaxed).newValue)
        Counter(label: "realtime_disconnects_total", dimensions: [("transport", transport.rawValue), ("reason", reason)], factory: factory)
            .increment()
    }

    func offered(_ offer: ClientQueue.Offer) {
        switch offer {
        case .queuedDroppingOlder: superseded.increment()
        case .dropped: bufferFull.increment()
        case .queued, .overflowed, .closed: break
        }
    }

    func pushed(_ transport: Transport, after latency: Duration) {
        perTransport[transport]?.pushed.increment()
        delivery.recordNanoseconds(latency.totalNanoseconds)
    }
}
