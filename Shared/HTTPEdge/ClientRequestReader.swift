import NIOCore

/// The client's side of a connection at the edge: its bytes, read into requests. Requests for the
/// gateway's own routes pass on, head and body, to the handlers behind (SwiftNIO's parser and the
/// router); what it finds for a service it hands to `EdgeStateMachine`, one call at a time. Part
/// of the machine, whose actions it adds to.
struct ClientRequestReader {
    /// What the client's next bytes are.
    enum Reading {
        /// The start of a request: heads are read here.
        case heads
        /// The rest of a routed request's body, passed on by length or by chunks.
        case routedBody(remaining: Int)
        case routedChunks(ChunkedBodyScanner)
        /// The rest of the body of a request answered without it, read and dropped.
        case discarding(remaining: Int)
        /// Everything goes to the handlers behind from now on.
        case passthrough
        /// The last answer is out and the connection ends: what the client still sends is dropped.
        case closing
        /// An upgrade the handler serves took the connection (`EdgeAction.handOver`).
        case handedOver
    }

    /// Whether bytes went on to the handlers behind (so they answer a shutdown notice themselves).
    enum PassedOn {
        case notYet
        case yes
        /// The connection ended before any did.
        case never
    }

    var reading = Reading.heads
    /// Bytes read and not yet handled: a head not yet whole, a body not yet sent on, or requests
    /// pipelined behind a proxied call.
    var pending = ByteBuffer()
    /// A proxied request read while a routed answer was outstanding: it waits for that to end.
    var waiting: (request: ClientRequest, call: any EdgeCall)?
    /// Requests passed to the router whose answers have not ended.
    var routed = 0
    var passedOn = PassedOn.notYet
    /// Bytes went to the handlers behind since the last read ended.
    var passedSinceReadComplete = false

    var isClosing: Bool {
        switch reading {
        case .closing, .handedOver: true
        default: false
        }
    }

    /// Takes bytes the client sent; `false` when they are dropped (the connection is closing) or
    /// went straight on to the router (it has the connection).
    mutating func take(_ bytes: ByteBuffer, callInProgress: Bool, into actions: inout CircularBuffer<EdgeAction>) -> Bool {
        switch reading {
        case .closing, .handedOver:
            return false
        case .passthrough where pending.readableBytes == 0 && !callInProgress:
            passToRouter(bytes, into: &actions)
            return false
        default:
            break
        }
        if pending.readableBytes == 0 {
            pending = bytes
        } else {
            var bytes = bytes
            pending.writeBuffer(&bytes)
        }
        return true
    }

    /// Works through what has been read up to the next proxied call, which it returns: routed
    /// requests and their bodies pass on, dropped bodies are dropped, and bytes that are no
    /// request are refused. `nil` when more must be read first, or the router's answers must end.
    mutating func nextCall(
        quiescing: Bool,
        classify: (ClientRequest) -> (any EdgeCall)?,
        handsOver: (ClientRequest) -> Bool,
        into actions: inout CircularBuffer<EdgeAction>
    ) -> (request: ClientRequest, call: any EdgeCall)? {
        while true {
            switch reading {
            case .closing, .handedOver:
                pending.clear()
                return nil
            case .passthrough:
                if pending.readableBytes > 0 {
                    passToRouter(pending, into: &actions)
                    pending.clear()
                }
                return nil
            case .routedBody(let remaining):
                guard pending.readableBytes > 0 else { return nil }
                let count = min(remaining, pending.readableBytes)
                passToRouter(pending.readSlice(length: count)!, into: &actions)
                reading = count == remaining ? .heads : .routedBody(remaining: remaining - count)
            case .routedChunks(var scanner):
                guard pending.readableBytes > 0 else { return nil }
                guard let scan = try? scanner.scan(pending) else {
                    // The router's parser answers what is wrong with it.
                    reading = .passthrough
                    continue
                }
                passToRouter(pending.readSlice(length: scan.count)!, into: &actions)
                reading = scan.ends ? .heads : .routedChunks(scanner)
            case .discarding(let remaining):
                guard pending.readableBytes > 0 else { return nil }
                let count = min(remaining, pending.readableBytes)
                pending.moveReaderIndex(forwardBy: count)
                reading = count == remaining ? .heads : .discarding(remaining: remaining - count)
            case .heads:
                if let waiting {
                    guard routed == 0 else { return nil }
                    self.waiting = nil
                    return waiting
                }
                guard !quiescing, pending.readableBytes > 0 else { return nil }
                let request: ClientRequest
                switch MessageHead.take(from: &pending) {
                case .incomplete:
                    return nil
                case .notPlain:
                    refuseUnreadable(nil, headTooLarge: false, into: &actions)
                    continue
                case .tooLarge:
                    refuseUnreadable(nil, headTooLarge: true, into: &actions)
                    continue
                case .head(let head):
                    guard let read = ClientRequest(head) else {
                        refuseUnreadable(head, headTooLarge: false, into: &actions)
                        continue
                    }
                    request = read
                }
                if request.upgrades, routed == 0, handsOver(request) {
                    handOver(request, into: &actions)
                    return nil
                }
                guard let call = classify(request) else {
                    route(request, into: &actions)
                    continue
                }
                guard routed == 0 else {
                    waiting = (request, call)
                    return nil
                }
                return (request, call)
            }
        }
    }

    /// Ends reading: what is read or waiting is dropped.
    mutating func close() {
        reading = .closing
        pending.clear()
        waiting = nil
    }

    mutating func passToRouter(_ bytes: ByteBuffer, into actions: inout CircularBuffer<EdgeAction>) {
        passedSinceReadComplete = true
        if passedOn == .notYet {
            passedOn = .yes
            actions.append(.passedOn(true))
        }
        actions.append(.passToRouter(bytes))
    }

    /// Gives the connection to the handler, for the upgrade `request` asks for. The router has
    /// nothing to wait for: unless it has served the connection already, it never will.
    private mutating func handOver(_ request: ClientRequest, into actions: inout CircularBuffer<EdgeAction>) {
        if passedOn == .notYet {
            passedOn = .never
            actions.append(.passedOn(false))
        }
        actions.append(.handOver(request, rest: pending))
        reading = .handedOver
        pending = ByteBuffer()
        waiting = nil
    }

    /// Passes a request for the gateway's own routes on to the handlers behind, then its body.
    private mutating func route(_ request: ClientRequest, into actions: inout CircularBuffer<EdgeAction>) {
        routed += 1
        passToRouter(request.head.bytes, into: &actions)
        if request.upgrades || request.closes {
            reading = .passthrough
            return
        }
        switch request.body {
        case .none, .length(0): break
        case .length(let length): reading = .routedBody(remaining: length)
        case .chunked: reading = .routedChunks(ChunkedBodyScanner())
        }
    }

    /// Bytes that are not a request the gateway reads: a 400 (431 for a head too long), and the
    /// connection ends, as what follows cannot be trusted to start a request. Behind a routed
    /// answer, the router's parser is left to refuse them in turn.
    private mutating func refuseUnreadable(_ head: MessageHead?, headTooLarge: Bool, into actions: inout CircularBuffer<EdgeAction>) {
        if routed > 0 {
            if let head { passToRouter(head.bytes, into: &actions) }
            reading = .passthrough
            return
        }
        actions.append(.answerUnreadable(headTooLarge: headTooLarge))
        actions.append(.close)
        close()
    }
}
