import HTTPTypes
import NIOCore

/// A client's request head as the gateway reads it before any HTTP parser: what it needs to
/// route the request, check it and find where it ends.
package struct ClientRequest {
    package let head: MessageHead
    package let method: HTTPRequest.Method
    /// The request target in origin form (`/path?query`); an absolute-form target
    /// (`http://host/path`) is read as its path and query.
    package let target: String
    /// `target` without its query.
    package let path: String
    /// HTTP/1.0: answers go without chunks, and the connection is kept only when asked.
    package let isHTTP10: Bool
    package let body: BodyFraming
    /// The client's last request on the connection: `Connection: close`, or HTTP/1.0 without
    /// `keep-alive`.
    package let closes: Bool
    /// `Expect: 100-continue`: the client waits for a `100 Continue` before it sends the body.
    package let expectsContinue: Bool
    /// An upgrade (to a WebSocket) is asked for: the connection is the router's from then on.
    package let upgrades: Bool

    /// How a request's body is delimited (RFC 9112 §6.3).
    package enum BodyFraming: Equatable {
        case none
        case length(Int)
        case chunked

        package var isEmpty: Bool { self == .none || self == .length(0) }
    }

    /// `nil` when the head is not a request the gateway can serve: a start line outside RFC
    /// 9112's grammar or of another version, a `Content-Length` that is not one number, a
    /// `Transfer-Encoding` whose last coding is not chunked or that comes with a `Content-Length`
    /// (the makings of request smuggling). Each is a 400.
    package init?(_ head: MessageHead) {
        let line = head.withBytes(0..<head.startLineLength) { bytes -> (method: Range<Int>, target: Range<Int>, isHTTP10: Bool)? in
            var index = 0
            while index < bytes.count, bytes[index].isTokenCharacter { index += 1 }
            guard index > 0, index < bytes.count, bytes[index] == .space else { return nil }
            let method = 0..<index
            let targetStart = index + 1
            index = targetStart
            while index < bytes.count, (0x21...0x7E).contains(bytes[index]) { index += 1 }
            guard index > targetStart, index < bytes.count, bytes[index] == .space, bytes.count - index - 1 == 8 else { return nil }
            let version = UnsafeRawBufferPointer(rebasing: bytes[(index + 1)...])
            guard version.starts(with: "HTTP/1.".utf8), version[7] == UInt8(ascii: "1") || version[7] == UInt8(ascii: "0") else { return nil }
            return (method, targetStart..<index, version[7] == UInt8(ascii: "0"))
        }
        guard let line, let target = Self.originForm(head.string(line.target)) else { return nil }
        let methodName = head.string(line.method)
        guard let method = methodName == "GET" ? .get : HTTPRequest.Method(methodName) else { return nil }
        if head.count(.transferEncoding) > 0 {
            guard head.listEnds(.transferEncoding, with: "chunked"), head.count(.contentLength) == 0 else { return nil }
            body = .chunked
        } else {
            switch head.contentLength {
            case .none: body = .none
            case .length(let length): body = .length(length)
            case .invalid: return nil
            }
        }
        self.head = head
        self.method = method
        self.target = target
        self.path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        self.isHTTP10 = line.isHTTP10
        self.closes = head.lists(.connection, "close") || (line.isHTTP10 && !head.lists(.connection, "keep-alive"))
        self.expectsContinue = head.lists(.expect, "100-continue")
        self.upgrades = head.count(.upgrade) > 0 && head.lists(.connection, "upgrade")
    }

    /// `target` in origin form: as it is when it starts with `/`, the path and query of an
    /// absolute-form target, `*` (an `OPTIONS` of the server as a whole) as it is.
    private static func originForm(_ target: String) -> String? {
        if target.hasPrefix("/") || target == "*" { return target }
        let lowercased = target.prefix(8).lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lowercased.hasPrefix($0) }) else { return nil }
        let afterAuthority = target.dropFirst(scheme.count)
        guard let slash = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        return afterAuthority[slash] == "/" ? String(afterAuthority[slash...]) : "/" + afterAuthority[slash...]
    }

    /// Whether the request may be sent again when the service cannot have seen it: no body, and
    /// a method whose repetition changes nothing more (RFC 9110 §9.2.2).
    package var isRetryable: Bool {
        body.isEmpty && (method == .get || method == .head || method == .options || method == .delete || method == .put)
    }
}
