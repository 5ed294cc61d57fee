import Foundation
import HTTPEdge
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A connection an `UpstreamPool` parks between exchanges.
protocol PooledConnection: AnyObject, Sendable {
    var channel: any Channel { get }
    /// Whether it can carry an exchange: open, and not failed while parked.
    var isOpen: Bool { get }
    func close()
}

/// Keep-alive HTTP/1.1 connections to one upstream service, pooled per event loop.
///
/// A call takes a parked connection of the client connection's own event loop, so client and
/// upstream sockets are served by one thread without handing the exchange between threads.
/// Without one it connects afresh. Connections idle longer than `idleTimeout` are closed when
/// next met, and at most `maxIdlePerLoop` wait per loop.
final class UpstreamPool: Sendable {
    /// The `Host` the upstream is asked for (`host[:port]` of its URL).
    let authority: String
    /// The path of the upstream's URL without its final `/`, put before each request's path.
    let basePath: String
    private let host: String
    private let port: Int
    private let tls: NIOSSLContext?
    private let serverName: String?
    private let connectTimeout: TimeAmount
    private let parked: ParkingLot<UpstreamConnection>
    private let maxConnections: Int
    private let openConnections = Atomic<Int>(0)
    /// `gateway_upstream_connections_opened_total{upstream}`: steady under steady load when
    /// connections are kept alive.
    private let opened: Counter

    /// - Throws: `UpstreamPoolError.unsupported` for a URL without a host or with a scheme other
    ///   than http and https; NIOSSL's error if TLS cannot be set up.
    /// - Parameter name: the upstream as metrics name it (the first route group served by it).
    init(
        name: String,
        url: URL,
        connectTimeout: Duration,
        metrics: any MetricsFactory,
        idleTimeout: Duration = .seconds(30),
        maxIdlePerLoop: Int = 64,
        maxConnections: Int = 1_024
    ) throws {
        guard let host = url.host, let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            throw UpstreamPoolError.unsupported(url.absoluteString)
        }
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        let hostName = host.contains(":") ? "[\(host)]" : host  // an IPv6 address is bracketed
        self.authority = url.port.map { "\(hostName):\($0)" } ?? hostName
        self.serverName = isAddress ? nil : host  // TLS names a server by name only, never by address
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        self.basePath = path
        self.tls = scheme == "https" ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        self.connectTimeout = .nanoseconds(connectTimeout.totalNanoseconds)
        self.parked = ParkingLot(idleTimeout: idleTimeout, maxIdlePerLoop: maxIdlePerLoop)
        self.maxConnections = maxConnections
        self.opened = Counter(label: "gateway_upstream_connections_opened_total", dimensions: [("upstream", name)], factory: metrics)
    }

    /// A new connection on `loop`, which must be the caller's (the client connection's, so the
    /// connection is parked where that client's next call looks for one).
    /// - Throws: `UpstreamPoolError.busy` when `maxConnections` are open; the future fails with
    ///   NIO's connect errors (refused, timed out, unresolvable host) and completes on `loop`.
    func connect(on loop: any EventLoop) throws -> EventLoopFuture<UpstreamConnection> {
        try reserveConnection()
        let future = openChannel(on: loop, UpstreamConnection.addHandlers).flatMapThrowing(UpstreamConnection.init(adopting:))
        future.whenComplete { [self] result in
            switch result {
            case .success(let connection): opened(connection)
            case .failure: openConnections.subtract(1, ordering: .relaxed)
            }
        }
        return future
    }

    private func reserveConnection() throws {
        guard openConnections.add(1, ordering: .relaxed).newValue <= maxConnections else {
            openConnections.subtract(1, ordering: .relaxed)
            throw UpstreamPoolError.busy
        }
    }

    private func opened(_ connection: some PooledConnection) {
        opened.increment()
        connection.channel.closeFuture.whenComplete { [self] _ in
            openConnections.subtract(1, ordering: .relaxed)
        }
    }

    /// Opens a connection to the service on `loop`: TLS when the service's URL asks for it, then
    /// the handlers `addHandlers` sets up. The future fails with NIO's connect errors (refused,
    /// timed out, unresolvable host) and completes on `loop`.
    private func openChannel(
        on loop: any EventLoop,
        _ addHandlers: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void
    ) -> EventLoopFuture<any Channel> {
        ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelInitializer { [tls, serverName] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try addHandlers(channel.pipeline.syncOperations)
                }
            }
            .connect(host: host, port: port)
    }

    /// Gives back a connection after its exchange: parked for the next one when `reusable` (the
    /// answer was read to its end, the request was sent whole, and neither asked to close),
    /// closed otherwise.
    func release(_ connection: UpstreamConnection, reusable: Bool) {
        guard reusable, connection.isOpen else {
            connection.close()
            return
        }
        parked.park(connection)
    }

    /// The most recently parked open connection of `loop`; closed and expired ones are dropped.
    func takeParked(on loop: any EventLoop) -> UpstreamConnection? {
        parked.take(on: loop)
    }

    /// Closes every parked connection (at shutdown).
    func closeParked() {
        parked.closeAll()
    }
}

/// Idle connections of one kind, a stack per event loop: the most recently parked is taken first,
/// so the longest idle ones expire at the bottom.
final class ParkingLot<Connection: PooledConnection>: Sendable {
    private struct Parked {
        var connection: Connection
        var since: ContinuousClock.Instant
    }

    /// One loop's parked connections, changed where they lie in the dictionary (through its
    /// `default:` subscript): a copy of the stack, with a retain of every connection in it, on each
    /// park and take would cost in proportion to how many are parked.
    private struct Stack {
        var parked: [Parked] = []

        /// Puts `connection` on top, and takes from the bottom those over `limit` or idle longer
        /// than `idleTimeout`.
        mutating func push(_ connection: Parked, limit: Int, idleTimeout: Duration) -> [Connection] {
            parked.append(connection)
            var surplus = 0
            while surplus < parked.count,
                parked.count - surplus > limit || connection.since - parked[surplus].since > idleTimeout
            {
                surplus += 1
            }
            guard surplus > 0 else { return [] }
            defer { parked.removeFirst(surplus) }
            return parked[..<surplus].map(\.connection)
        }

        /// The most recently parked open connection, and the expired ones met on the way (which
        /// leave the stack).
        mutating func pop(now: ContinuousClock.Instant, idleTimeout: Duration) -> (found: Connection?, expired: [Connection]) {
            while let last = parked.popLast() {
                if now - last.since > idleTimeout {
                    // Everything below it has waited longer still.
                    defer { parked.removeAll(keepingCapacity: true) }
                    return (nil, parked.map(\.connection) + [last.connection])
                }
                if last.connection.isOpen { return (last.connection, []) }
            }
            return (nil, [])
        }
    }

    private let idleTimeout: Duration
    private let maxIdlePerLoop: Int
    private let stacks = Mutex<[ObjectIdentifier: Stack]>([:])

    init(idleTimeout: Duration, maxIdlePerLoop: Int) {
        self.idleTimeout = idleTimeout
        self.maxIdlePerLoop = maxIdlePerLoop
    }

    func park(_ connection: Connection, now: ContinuousClock.Instant = .now) {
        let key = ObjectIdentifier(connection.channel.eventLoop)
        let parked = Parked(connection: connection, since: now)
        let surplus = stacks.withLock { stacks in
            stacks[key, default: Stack()].push(parked, limit: maxIdlePerLoop, idleTimeout: idleTimeout)
        }
        for connection in surplus { connection.close() }
    }

    func take(on loop: any EventLoop, now: ContinuousClock.Instant = .now) -> Connection? {
        let key = ObjectIdentifier(loop)
        let (found, expired) = stacks.withLock { stacks in
            stacks[key, default: Stack()].pop(now: now, idleTimeout: idleTimeout)
        }
        for connection in expired { connection.close() }
        return found
    }

    func closeAll() {
        let all = stacks.withLock { stacks in
            defer { stacks.removeAll() }
            return stacks.values.flatMap { $0.parked.map(\.connection) }
        }
        for connection in all { connection.close() }
    }
}
