import Foundation
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 connection over a plain socket, for what HTTP clients do not do: several requests
/// sent in one write before any answer is read (pipelining).
///
/// The socket calls block, so they run on NIO's blocking-work pool, never on a thread of Swift's
/// concurrency pool: with two of those on two cores, a test waiting there would starve the
/// services in the same process that are to answer it. One test uses a connection at a time.
final class RawHTTPConnection: @unchecked Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    private let socket: Int32
    private var received: [UInt8] = []

    /// Connects to `127.0.0.1:port`; reads give up after `timeout`.
    init(port: Int, timeout: Duration = .seconds(10)) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw RawHTTPError.system("socket", errno) }
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // deinit closes the socket: it runs when an initializer throws after every stored property
        // is set, so closing it here as well would close whatever reused the number meanwhile.
        guard connected == 0 else { throw RawHTTPError.system("connect", errno) }
    }

    deinit {
        close(socket)
    }

    /// Writes `text` as it is, in one call.
    func send(_ text: String) async throws {
        try await NIOThreadPool.singleton.runIfActive { try self.sendBlocking(text) }
    }

    /// The next `count` answers, in the order they arrive; those at the indices of `headRequests`
    /// answer `HEAD` requests, so they have no body whatever their head says.
    func read(_ count: Int, headRequests: Set<Int> = []) async throws -> [Answer] {
        try await NIOThreadPool.singleton.runIfActive { try self.readBlocking(count, headRequests: headRequests) }
    }

    /// The status of an interim (1xx) answer, which must be what comes next.
    func readInterim() async throws -> Int {
        try await NIOThreadPool.singleton.runIfActive {
            while true {
                if let answer = try self.parseAnswer(bodyless: true) { return answer.status }
                try self.receive()
            }
        }
    }

    /// Everything until the gateway closes the connection: the answer's head and its body as text.
    func readToEnd() async throws -> (head: String, body: String) {
        try await NIOThreadPool.singleton.runIfActive {
            while true {
                do {
                    try self.receive()
                } catch RawHTTPError.closed {
                    break
                }
            }
            let text = String(decoding: self.received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { throw RawHTTPError.malformed("no head") }
            return (String(text[..<end.lowerBound]), String(text[end.upperBound...]))
        }
    }

    /// Writes `bytes` as they are, in one call.
    func send(bytes: [UInt8]) async throws {
        try await NIOThreadPool.singleton.runIfActive { try self.sendBlocking(bytes) }
    }

    /// The next WebSocket frame the server sent (after its `101`, read with `read`): its opcode and
    /// payload; `nil` once the server has closed the connection.
    func readFrame() async throws -> (opcode: UInt8, payload: [UInt8])? {
        try await NIOThreadPool.singleton.runIfActive {
            while true {
                if self.received.count >= 2 {
                    let length7 = Int(self.received[1] & 0x7F)
                    let (length, start) =
                        switch length7 {
                        case 126: (self.received.count >= 4 ? Int(self.received[2]) << 8 | Int(self.received[3]) : -1, 4)
                        case 127: (self.received.count >= 10 ? self.received[2..<10].reduce(0) { $0 << 8 | Int($1) } : -1, 10)
                        default: (length7, 2)
                        }
                    if length >= 0, self.received.count >= start + length {
                        let frame = (self.received[0] & 0x0F, Array(self.received[start..<start + length]))
                        self.received.removeFirst(start + length)
                        return frame
                    }
                }
                do {
                    try self.receive()
                } catch RawHTTPError.closed {
                    return nil
                }
            }
        }
    }

    private func sendBlocking(_ text: String) throws {
        try sendBlocking(Array(text.utf8))
    }

    private func sendBlocking(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw RawHTTPError.system("send", errno) }
            sent += count
        }
    }

    private func readBlocking(_ count: Int, headRequests: Set<Int>) throws -> [Answer] {
        var answers: [Answer] = []
        while answers.count < count {
            if let answer = try parseAnswer(bodyless: headRequests.contains(answers.count)) {
                answers.append(answer)
            } else {
                try receive()
            }
        }
        return answers
    }

    private func receive() throws {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw count == 0 ? RawHTTPError.closed : RawHTTPError.system("recv", errno) }
        received.append(contentsOf: chunk.prefix(count))
    }

    /// An answer taken off the front of what was received, or `nil` when it is not all there yet;
    /// a `bodyless` one ends with its head.
    private func parseAnswer(bodyless: Bool = false) throws -> Answer? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = received.indices.dropLast(3).first(where: { received[$0..<$0 + 4].elementsEqual(separator) }) else { return nil }
        let lines = String(decoding: received[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw RawHTTPError.malformed(lines[0]) }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let bodyStart = headEnd + 4
        if bodyless || (100..<200).contains(status) || status == 204 || status == 304 {
            received.removeFirst(bodyStart)
            return Answer(status: status, headers: headers, body: [])
        }
        if let length = headers["content-length"].flatMap(Int.init) {
            guard received.count >= bodyStart + length else { return nil }
            let body = Array(received[bodyStart..<bodyStart + length])
            received.removeFirst(bodyStart + length)
            return Answer(status: status, headers: headers, body: body)
        }
        guard headers["transfer-encoding"]?.lowercased() == "chunked" else { throw RawHTTPError.malformed("no framing") }
        var body: [UInt8] = []
        var offset = bodyStart
        while true {
            guard let lineEnd = received[offset...].indices.dropLast().first(where: { received[$0] == 13 && received[$0 + 1] == 10 }) else {
                return nil
            }
            guard let size = Int(String(decoding: received[offset..<lineEnd], as: UTF8.self), radix: 16) else {
                throw RawHTTPError.malformed("chunk size")
            }
            let dataStart = lineEnd + 2
            guard received.count >= dataStart + size + 2 else { return nil }
            if size == 0 {
                received.removeFirst(dataStart + 2)
                return Answer(status: status, headers: headers, body: body)
            }
            body += received[dataStart..<dataStart + size]
            offset = dataStart + size + 2
        }
    }
}

enum RawHTTPError: Error {
    case system(String, Int32)
    case closed
    case malformed(String)
}
