import Foundation
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Keep-alive HTTP/1.1 connections to one upstream service, pooled per event loop.
///
/// A request takes a parked connection of the event loop it runs on (with the gateway's tasks
/// on the event loops, the loop of the client's own connection), so client and upstream sockets
/// are served by one thread without handing the exchange between threads. Without one it
/// connects afresh. Connections idle longer than `idleTimeout` are closed when next met, and at
/// most `maxIdlePerLoop` wait per loop.
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
    private let idleTimeout: Duration
    private let maxIdlePerLoop: Int
    private let maxConnections: Int
    private let parked = Mutex<[ObjectIdentifier: [Parked]]>([:])
    private let openConnections = Atomic<Int>(0)
    /// `gateway_upstream_connections_opened_total{upstream}`: steady under steady load when
    /// connections are kept alive.
    private let opened: Counter

    private struct Parked {
        var connection: UpstreamConnection
        var since: ContinuousClock.Instant
    }

    /// - Throws: `UpstreamPoolError.unsupported` for a URL without a host or with a scheme other
    ///   than http and https; NIOSSL's error if TLS cannot be set up.
    /// - Parameter name: the upstream as metrics name it (the first route group served by it).
    init(
        name: String, url: URL, connectTimeout: Duration, metrics: any MetricsFactory,
        idleTimeout: Duration = .seconds(30), maxIdlePerLoop: Int = 64, maxConnections: Int = 1_024
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
        self.idleTimeout = idleTimeout
        self.maxIdlePerLoop = maxIdlePerLoop
        self.maxConnections = maxConnections
        self.opened = Counter(label: "gateway_upstream_connections_opened_total", dimensions: [("upstream", name)], factory: metrics)
    }

    /// A connection on `loop` (the client's, so client and service are served by one thread, and
    /// the connection is parked where that client's next call looks for one) for one exchange, and
    /// whether it carried one before (then, if it fails before any answer, the upstream most
    /// likely closed it while idle and never saw the request).
    /// - Throws: NIO's connect errors, or `UpstreamPoolError.busy` when `maxConnections` are open.
    func lease(on loop: any EventLoop) async throws -> (connection: UpstreamConnection, reused: Bool) {
        if let connection = takeParked(on: loop) { return (connection, true) }
        guard openConnections.add(1, ordering: .relaxed).newValue <= maxConnections else {
            openConnections.subtract(1, ordering: .relaxed)
            throw UpstreamPoolError.busy
        }
        do {
            let tls = tls, serverName = serverName
            let connection = try await UpstreamConnection.connect(host: host, port: port, on: loop, connectTimeout: connectTimeout) { channel in
                if let tls {
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                }
            }
            opened.increment()
            connection.channel.closeFuture.whenComplete { [self] _ in
                openConnections.subtract(1, ordering: .relaxed)
            }
            return (connection, false)
        } catch {
            openConnections.subtract(1, ordering: .relaxed)
            throw error
        }
    }

    /// Gives back a connection after its exchange: parked for the next one when `reusable` (the
    /// answer was read to its end and did not ask to close), closed otherwise.
    func release(_ connection: UpstreamConnection, reusable: Bool) {
        guard reusable, connection.isOpen else {
            connection.close()
            return
        }
        connection.park()
        restore(connection)
    }

    /// Parks again a connection `takeParked` gave out that carried no exchange.
    func restore(_ connection: UpstreamConnection) {
        let key = ObjectIdentifier(connection.channel.eventLoop)
        let now = ContinuousClock.now
        let surplus: [UpstreamConnection] = parked.withLock { parked in
            var stack = parked[key, default: []]
            stack.append(Parked(connection: connection, since: now))
            // The stack's bottom holds the longest idle.
            var surplus: [UpstreamConnection] = []
            while let oldest = stack.first, stack.count > maxIdlePerLoop || now - oldest.since > idleTimeout {
                surplus.append(stack.removeFirst().connection)
            }
            parked[key] = stack
            return surplus
        }
        for connection in surplus { connection.close() }
    }

    /// Closes every parked connection (at shutdown).
    func closeParked() {
        let all = parked.withLock { parked in
            defer { parked.removeAll() }
            return parked.values.flatMap { $0.map(\.connection) }
        }
        for connection in all { connection.close() }
    }

    /// The most recently parked open connection of `loop`; closed and expired ones are dropped.
    func takeParked(on loop: any EventLoop) -> UpstreamConnection? {
        let key = ObjectIdentifier(loop)
        let now = ContinuousClock.now
        let (found, expired): (UpstreamConnection?, [UpstreamConnection]) = parked.withLock { parked in
            guard var stack = parked[key], !stack.isEmpty else { return (nil, []) }
            defer { parked[key] = stack }
            while let last = stack.popLast() {
                if now - last.since > idleTimeout {
                    // Everything below it has waited longer still.
                    defer { stack.removeAll() }
                    return (nil, stack.map(\.connection) + [last.connection])
                }
                if last.connection.isOpen { return (last.connection, []) }
            }
            return (nil, [])
        }
        for connection in expired { connection.close() }
        return found
    }
}

enum UpstreamPoolError: Error, Equatable {
    /// The upstream's URL cannot be served (configuration).
    case unsupported(String)
    /// As many connections as allowed are open to the upstream: the request is shed (503).
    case busy
}
