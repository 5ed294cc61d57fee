import Foundation
import HTTPEdge
import NIOCore

/// A proxied call as the tests' routes make it: every path under `/api` goes to a service.
final class TestCall: EdgeCall {
    let path: String
    let maxBodySize: Int
    let timeout = TimeAmount.seconds(30)

    init(path: String, maxBodySize: Int) {
        self.path = path
        self.maxBodySize = maxBodySize
    }
}

/// A problem the tests' checks refuse calls with.
struct TestRefusal: Error, Equatable {
    var status: Int
}

/// One client connection's state machine, driven event by event: each event gives back the
/// actions it asked for, described in words (`describe`), so a test reads as the exchange goes.
struct EdgeDriver {
    var machine: EdgeStateMachine
    /// The deadline clock: each call admitted starts its 30 s from here.
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    /// The calls admitted so far, most recent last.
    private(set) var calls: [TestCall] = []

    init(maxBodySize: Int = 1 << 20, limits: EdgeLimits = EdgeLimits()) {
        // Upgrades under `/live` are the handler's own (as the gateway's realtime WebSockets are).
        machine = EdgeStateMachine(
            limits: limits,
            handsOver: { $0.path.hasPrefix("/live") },
            classify: { $0.path.hasPrefix("/api") ? TestCall(path: $0.path, maxBodySize: maxBodySize) : nil }
        )
    }

    // MARK: Events

    mutating func read(_ text: String) -> [String] {
        machine.clientRead(ByteBuffer(string: text))
        return drain()
    }

    mutating func readBytes(_ bytes: [UInt8]) -> [String] {
        machine.clientRead(ByteBuffer(bytes: bytes))
        return drain()
    }

    mutating func admit() -> [String] {
        machine.admitted(now: now)
        return drain()
    }

    mutating func refuse(_ status: Int) -> [String] {
        machine.refused(TestRefusal(status: status))
        return drain()
    }

    mutating func connect(reused: Bool = false, writable: Bool = true) -> [String] {
        machine.connected(reused: reused, isWritable: writable)
        return drain()
    }

    mutating func answer(_ text: String) -> [String] {
        machine.upstreamRead(ByteBuffer(string: text))
        return drain()
    }

    /// Admits the call just read, connects it and sends the service's whole `answer`.
    mutating func serve(_ answer: String) -> [String] {
        admit() + connect() + self.answer(answer)
    }

    mutating func event(_ send: (inout EdgeStateMachine) -> Void) -> [String] {
        send(&machine)
        return drain()
    }

    // MARK: Actions

    mutating func drain() -> [String] {
        var described: [String] = []
        while let action = machine.nextAction() {
            if case .admit(let call) = action { calls.append(call as! TestCall) }
            described.append(Self.describe(action))
        }
        return described
    }

    static func describe(_ action: EdgeAction) -> String {
        switch action {
        case .read: "read"
        case .write(let bytes): "write \(text(bytes))"
        case .writeContinue: "100 continue"
        case .flush: "flush"
        case .writeAnswerHead(_, let head, let framing, let body):
            "head \(head.status)\(describe(framing))\(body.map { ", then \(text($0))" } ?? "")"
        case .answer(_, let answer, let closes): "answer \(status(of: answer))\(closes ? ", close" : "")"
        case .answerUnreadable(let tooLarge): tooLarge ? "answer 431, close" : "answer 400, close"
        case .finished(_, let status): "finished \(status)"
        case .completed(_, let status, let reusable): "completed \(status), \(reusable ? "park upstream" : "close upstream")"
        case .close: "close"
        case .handOver(let request, let rest): "hand over \(request.path)\(rest.readableBytes > 0 ? ", then \(text(rest))" : "")"
        case .closeOutput: "close output, linger"
        case .passToRouter(let bytes): "router \(text(bytes))"
        case .routerReadComplete: "router read complete"
        case .passedOn(let passed): "passed on \(passed)"
        case .quiesceRouter: "quiesce router"
        case .scheduleResume: "schedule resume"
        case .admit(let call): "admit \((call as! TestCall).path)"
        case .armDeadline: "arm deadline"
        case .cancelDeadline: "cancel deadline"
        case .connect(_, let reuse, _): reuse ? "connect" : "connect anew"
        case .sendHead(_, let flush): flush ? "send head, flush" : "send head"
        case .sendBody(let bytes): "send \(text(bytes))"
        case .flushUpstream: "flush upstream"
        case .setUpstreamReading(let reading): reading ? "upstream reading on" : "upstream reading off"
        case .closeUpstream: "close upstream"
        }
    }

    static func status(of answer: EdgeAnswer) -> String {
        switch answer {
        case .refusal(let error): "\((error as? TestRefusal)?.status ?? 0) refusal"
        case .preflight: "204 preflight"
        case .bodyTooLarge(let limit): "413 over \(limit)"
        case .malformedBody: "400 malformed body"
        case .upstreamFailed(.unreachable, _): "503"
        case .upstreamFailed(.timeout, _): "504"
        case .upstreamFailed(.broken, _): "502"
        }
    }

    static func describe(_ framing: AnswerFraming) -> String {
        var text = ""
        switch framing.length {
        case .none: text += ", no length"
        case .contentLength(let length): text += ", length \(length)"
        case .chunked: text += ", chunked"
        }
        switch framing.connection {
        case .unstated: break
        case .keepAlive: text += ", keep-alive"
        case .close: text += ", close"
        }
        return text
    }

    /// Bytes as text, line ends shown as `⏎`.
    static func text(_ bytes: ByteBuffer) -> String {
        String(decoding: bytes.readableBytesView, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "⏎")
    }
}
