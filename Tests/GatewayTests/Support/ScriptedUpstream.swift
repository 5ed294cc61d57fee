import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An upstream that plays a script over plain sockets, for what an HTTP server library will not
/// do on request: each accepted connection answers some requests (bodiless ones, read up to their
/// blank line) and then closes without answering the next, as a service does that closes an idle
/// kept-alive connection just as the gateway sends on it.
final class ScriptedUpstream: Sendable {
    /// What one connection does: the bodies it answers with, in order; after them, it reads one
    /// more request and closes (`closesAfter`), or keeps waiting until the test ends.
    struct Connection: Sendable {
        var answers: [String]
        var closesAfter: Bool
        /// Whole answers (head and body, as sent) instead of `answers`' bodies in a 200 each.
        var raw: [String] = []

        /// A connection that answers one request with `answer` as it is, then closes.
        static func sends(_ answer: String) -> Connection {
            Connection(answers: [], closesAfter: false, raw: [answer])
        }
    }

    let port: Int
    private let listener: Listener
    private let requests = RequestCount()

    private final class RequestCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// The listening socket, closed once by whoever is last to use it: the accepting thread when
    /// its script is done or accepting fails. `stop()` only shuts it down, which wakes a blocked
    /// `accept`. Closed by `stop()` while the thread went on to `accept` on its number, it could
    /// take a connection meant for a socket the process opened since under that number.
    private final class Listener: Sendable {
        let descriptor: Int32
        private let open = Mutex(true)

        init(_ descriptor: Int32) { self.descriptor = descriptor }

        func shutDown() {
            open.withLock { if $0 { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) } }
        }

        func close() {
            open.withLock {
                if $0 { _ = Glibc.close(descriptor) }
                $0 = false
            }
        }
    }

    /// Starts listening on a free loopback port; connections follow `script` in the order they
    /// are accepted.
    init(_ script: [Connection]) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw RawHTTPError.system("socket", errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw RawHTTPError.system("listen", errno)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = Listener(listener)
        let (requests, owned) = (requests, self.listener)
        Thread.detachNewThread {
            defer { owned.close() }
            for step in script {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Thread.detachNewThread {
                    if !step.raw.isEmpty {
                        for answer in step.raw {
                            guard Self.readRequest(connection) else { return }
                            requests.value.add(1, ordering: .relaxed)
                            _ = answer.withCString { send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                        }
                        close(connection)
                        return
                    }
                    for body in step.answers {
                        guard Self.readRequest(connection) else { return }
                        requests.value.add(1, ordering: .relaxed)
                        let answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                        _ = answer.withCString { send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                    }
                    if step.closesAfter, Self.readRequest(connection) {
                        requests.value.add(1, ordering: .relaxed)
                        close(connection)
                    }
                }
            }
        }
    }

    /// Requests read so far, answered or not.
    var requestCount: Int { requests.value.load(ordering: .relaxed) }

    /// Stops accepting (connections already open stay until the process ends or they close).
    func stop() {
        listener.shutDown()
    }

    /// Reads up to the blank line that ends a request's head; `false` when the peer closed.
    private static func readRequest(_ connection: Int32) -> Bool {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(connection, &byte, 1, 0) == 1 else { return false }
            received.append(byte)
        }
        return true
    }
}
