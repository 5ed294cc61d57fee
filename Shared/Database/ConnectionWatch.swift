import PostgresNIO
import ServiceKit
import Synchronization

/// PostgresNIO 1.33's `PostgresConnection.query` never returns when the connection has closed
/// already: the request is written into a pipeline that no longer holds the handler that would
/// answer or fail it. So a transaction whose connection the server ended while the transaction
/// waited between statements — a relay waiting for Kafka's acknowledgements, a consumer between
/// two writes, a request calling another service, when Postgres restarts — would hang on its next
/// statement, its `COMMIT` or its `ROLLBACK`, for good: a relay's loop or a consumer's partition
/// stopped, a request held until its deadline. (Seen in the whole-stack fault test: three
/// services' relays stuck with thousands of rows after Postgres restarted.)
extension PostgresConnection {
    /// Runs `operation`, which works on this connection, in a task of its own, and gives back
    /// what it returns or throws — unless the connection closes first: then `ConnectionLost`, at
    /// once, and the operation is left to end by itself (its statements fail or hang on the
    /// closed connection; Postgres has rolled its transaction back). Cancelling the caller
    /// cancels the operation.
    package func abandoningIfClosed<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let outcome = FirstOutcome<Result>()
        guard let watch = ConnectionWatches.shared.watch(self, onClose: { outcome.settle(.failure(ConnectionLost())) }) else {
            throw ConnectionLost()
        }
        defer { ConnectionWatches.shared.stopWatching(watch) }
        let work = outcome.run(operation)
        return try await withTaskCancellationHandler {
            try await outcome.value().get()
        } onCancel: {
            work.cancel()
        }
    }
}

/// The connection under a transaction closed (the server ended it, or the network did) before
/// the transaction was over; Postgres rolled it back.
package struct ConnectionLost: Error, TransientFailure, LogDiagnosable {
    package var isTransient: Bool { true }
    package var diagnosis: String { "Postgres: the connection closed under a transaction" }
}

/// Who waits on which connection: a connection's `closeFuture` gets one callback, the first time
/// it is watched (a callback per transaction would pile up on a long-lived pooled connection),
/// and that callback calls everyone still waiting when it closes.
private final class ConnectionWatches: Sendable {
    static let shared = ConnectionWatches()

    struct Watch {
        var connection: ObjectIdentifier
        var token: Int
    }

    private struct State {
        var next = 0
        var waiters: [ObjectIdentifier: [Int: @Sendable () -> Void]] = [:]
    }

    private let state = Mutex(State())

    /// Calls `onClose` when `connection` closes, unless `stopWatching` came first; `nil` when it
    /// is closed already.
    func watch(_ connection: PostgresConnection, onClose: @escaping @Sendable () -> Void) -> Watch? {
        guard !connection.isClosed else { return nil }
        let key = ObjectIdentifier(connection)
        let (token, first) = state.withLock { state in
            state.next += 1
            let first = state.waiters[key] == nil
            state.waiters[key, default: [:]][state.next] = onClose
            return (state.next, first)
        }
        if first {
            // Runs at once if the connection closed meanwhile.
            connection.closeFuture.whenComplete { [self] _ in
                let waiting = state.withLock { $0.waiters.removeValue(forKey: key) } ?? [:]
                for onClose in waiting.values { onClose() }
            }
        }
        return Watch(connection: key, token: token)
    }

    func stopWatching(_ watch: Watch) {
        state.withLock { state in
            _ = state.waiters[watch.connection]?.removeValue(forKey: watch.token)
        }
    }
}
