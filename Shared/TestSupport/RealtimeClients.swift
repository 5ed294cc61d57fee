import AsyncHTTPClient
import Foundation
import NIOCore
import PlainWebSocket
import Synchronization

/// A WebSocket client of `/v1/realtime` for tests: connects in the background, keeps every text
/// message it receives, and can send.
package final class RealtimeSocket: Sendable {
    private let received = Mutex<[String]>([])
    private let receivedBinary = Mutex<[[UInt8]]>([])
    private let outbound = Mutex<PlainWebSocketClient.Writer?>(nil)
    private let closed = Mutex<(code: UInt16?, reason: String?)?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// When each message arrived.
    private let arrivals = Mutex<[ContinuousClock.Instant]>([])

    /// Connects to `url` (with `token` as a bearer header when given); `reads` false makes a
    /// client that never reads what it is sent.
    package init(url: String, token: String? = nil, reads: Bool = true) {
        let headers = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        let started = Task { [self] in
            do {
                let frame = try await PlainWebSocketClient.run(url: url, headers: headers, reads: reads) { writer in
                    self.outbound.withLock { $0 = writer }
                } onBinary: { bytes in
                    self.arrivals.withLock { $0.append(.now) }
                    self.receivedBinary.withLock { $0.append(bytes) }
                } onText: { text in
                    self.arrivals.withLock { $0.append(.now) }
                    self.received.withLock { $0.append(text) }
                }
                closed.withLock { $0 = (frame?.code, frame?.reason) }
            } catch {
                closed.withLock { $0 = (nil, "\(error)") }
            }
        }
        task.withLock { $0 = started }
    }

    package var messages: [String] { received.withLock { $0 } }
    /// Every binary message received so far, in order.
    package var binaryMessages: [[UInt8]] { receivedBinary.withLock { $0 } }
    package var arrivalTimes: [ContinuousClock.Instant] { arrivals.withLock { $0 } }
    package var closeFrame: (code: UInt16?, reason: String?)? { closed.withLock { $0 } }

    package func send(_ json: String) async throws {
        try await writer().send(text: json)
    }

    package func send(binary: [UInt8]) async throws {
        try await writer().send(binary: binary)
    }

    /// The binary message matching `predicate` within `timeout`.
    package func binary(within timeout: Duration = RealtimeClientError.patience, where predicate: ([UInt8]) -> Bool) async throws -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = binaryMessages.first(where: predicate) { return found }
            guard ContinuousClock.now < deadline else {
                throw RealtimeClientError.timedOut("a matching binary message (connection closed: \(String(describing: closeFrame)))", messages)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    private func writer() async throws -> PlainWebSocketClient.Writer {
        let deadline = ContinuousClock.now + .seconds(10)
        while outbound.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let writer = outbound.withLock({ $0 }) else { throw RealtimeClientError.notConnected }
        return writer
    }

    /// The first message (as JSON) matching `predicate` within `timeout`.
    package func message(
        within timeout: Duration = RealtimeClientError.patience,
        where predicate: ([String: Any]) -> Bool
    ) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            for text in messages {
                if let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], predicate(object) { return object }
            }
            guard ContinuousClock.now < deadline else {
                throw RealtimeClientError.timedOut("a matching message (connection closed: \(String(describing: closeFrame)))", messages)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The first Phoenix channels message (Supabase Realtime) matching `predicate` within
    /// `timeout`, read from either shape — a 1.0.0 object or a 2.0.0 array `[join_ref, ref, topic,
    /// event, payload]` — as an object with those five keys (`NSNull` for a null).
    package func phoenix(
        within timeout: Duration = RealtimeClientError.patience,
        where predicate: ([String: Any]) -> Bool
    ) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            for message in phoenixMessages where predicate(message) { return message }
            guard ContinuousClock.now < deadline else {
                throw RealtimeClientError.timedOut("a matching Phoenix message (connection closed: \(String(describing: closeFrame)))", messages)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Every Phoenix message received so far, in order, as `phoenix(within:where:)` reads them.
    package var phoenixMessages: [[String: Any]] {
        messages.compactMap { text in
            // The object first: on Linux a five-key object also casts to an array (of its entries).
            switch try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) {
            case let object as [String: Any]:
                return object
            case let array as [Any] where array.count == 5:
                return ["join_ref": array[0], "ref": array[1], "topic": array[2], "event": array[3], "payload": array[4]]
            default:
                return nil
            }
        }
    }

    /// Waits for the connection to end and returns the close frame the server sent.
    package func waitForClose(within timeout: Duration = RealtimeClientError.patience) async throws -> (code: UInt16?, reason: String?) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let closed = closeFrame { return closed }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RealtimeClientError.timedOut("the close (connected: \(outbound.withLock { $0 } != nil))", messages)
    }

    /// Starts the closing handshake and waits for the server's answer (at most a second).
    package func disconnect() async {
        let running = task.withLock { $0 }
        if let writer = outbound.withLock({ $0 }) { try? await writer.close() }
        let deadline = ContinuousClock.now + .seconds(1)
        while closeFrame == nil, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        running?.cancel()
        _ = await running?.value
    }
}

package enum RealtimeClientError: Error {
    case notConnected
    /// What was waited for, and the messages received until then.
    case timedOut(String, [String])

    /// How long a test client waits for what it expects: generous, because `make test` runs every
    /// suite at once on two cores (a wait of 10 s once ran out there); latency budgets are checked
    /// end to end, not here.
    package static let patience: Duration = .seconds(20)
}

/// An SSE client of `/v1/events`: keeps the raw stream and parses it into events.
package final class EventStreamClient: Sendable {
    package struct Event: Equatable {
        package var id: String?
        package var event: String?
        package var data: String
    }

    private let text = Mutex("")
    private let status = Mutex<Int?>(nil)
    private let ended = Mutex(false)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// Its own client, so that stopping closes the connection at once.
    private let client = HTTPClient(eventLoopGroupProvider: .singleton)

    package init(url: String, token: String?, lastEventID: String? = nil) {
        var request = HTTPClientRequest(url: url)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let started = Task { [self] in
            defer { ended.withLock { $0 = true } }
            guard let response = try? await self.client.execute(request, timeout: .seconds(300)) else { return }
            status.withLock { $0 = Int(response.status.code) }
            do {
                for try await buffer in response.body {
                    text.withLock { $0 += String(buffer: buffer) }
                }
            } catch {}
        }
        task.withLock { $0 = started }
    }

    deinit {
        // A test that failed before `stop()`: shut the client down without waiting.
        task.withLock { $0?.cancel() }
        client.shutdown { _ in }
    }

    package var raw: String { text.withLock { $0 } }
    package var statusCode: Int? { status.withLock { $0 } }
    package var hasEnded: Bool { ended.withLock { $0 } }

    package var events: [Event] {
        raw.components(separatedBy: "\n\n").compactMap { block in
            var event = Event(data: "")
            var hasData = false
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event.event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") {
                    event.data = String(line.dropFirst(6))
                    hasData = true
                }
            }
            return hasData ? event : nil
        }
    }

    /// The response's status code, once its head has arrived.
    package func waitForStatus(within timeout: Duration = RealtimeClientError.patience) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let code = statusCode { return code }
            if hasEnded { throw RealtimeClientError.notConnected }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RealtimeClientError.timedOut("the response's status", [raw])
    }

    package func event(within timeout: Duration = RealtimeClientError.patience, where predicate: (Event) -> Bool) async throws -> Event {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let match = events.first(where: predicate) { return match }
            guard ContinuousClock.now < deadline else { throw RealtimeClientError.timedOut("a matching event", [raw]) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    package func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        try? await client.shutdown()
        _ = await running?.value
    }
}
