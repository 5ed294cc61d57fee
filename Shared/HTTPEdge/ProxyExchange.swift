import NIOCore

/// One proxied call on a client connection: its request's body on its way to the service, and the
/// service's answer on its way back to the client. Part of `EdgeStateMachine`, which starts and
/// ends it; what it decides goes into the machine's actions.
struct ProxyExchange {
    /// What is left to send of the request's body.
    enum Upload {
        case none
        case length(Int)
        /// Chunks, and how many bytes of data have passed (for the body limit).
        case chunked(ChunkedBodyScanner, received: Int)
    }

    /// Where the call is with its service.
    enum Upstream: Equatable {
        /// Being admitted, or waiting for a connection.
        case none
        /// Sent over a connection; `reused`: one that carried calls before (so one that closes
        /// before answering most likely closed while idle, and never saw the call).
        case connected(reused: Bool)
    }

    /// Where the answer is.
    enum Answer {
        /// Nothing of it has come, or not its whole head.
        case awaitingHead
        /// A small answer, kept until it has all come: until then a break-off can still be
        /// answered with a 502.
        case buffering(AnswerReader.Head, ByteBuffer?)
        /// Its head went to the client; its body passes on, changed as `Transform` says.
        case streaming(AnswerReader.Head, Transform)
    }

    /// What the body's bytes go through on their way to the client.
    enum Transform {
        case none
        /// A chunked answer's data without its framing, for an HTTP/1.0 client.
        case unchunk(ChunkedBodyScanner)
        /// An answer delimited by the service closing, in chunks for an HTTP/1.1 client.
        case chunk
    }

    /// What became of the answer after a step.
    enum Progress {
        case going
        /// It has all gone to the client.
        case complete(AnswerReader.Head)
        case failed(any Error)
    }

    /// What the exchange needs to know of its request; the head itself stays with the call
    /// (copying it along would retain its bytes, fields and strings at every step).
    struct Traits {
        var isHEAD: Bool
        var isHTTP10: Bool
        /// The client's last request on the connection.
        var closes: Bool
        var expectsContinue: Bool
        /// Safe to send again when the service cannot have seen it.
        var isRetryable: Bool

        init(_ request: ClientRequest) {
            isHEAD = request.method == .head
            isHTTP10 = request.isHTTP10
            closes = request.closes
            expectsContinue = request.expectsContinue
            isRetryable = request.isRetryable
        }
    }

    let request: Traits
    let call: any EdgeCall
    var upload: Upload
    var upstream = Upstream.none
    var upstreamWritable = true
    /// Connections tried (a failed connect is tried once more).
    var attempts = 0
    /// `100 Continue` went to the client.
    var continued = false
    /// When the answer must have begun.
    var deadline = NIODeadline.distantFuture
    var reader: AnswerReader
    var answer = Answer.awaitingHead
    /// The client connection ends after this answer (decided when its head is written).
    var closes = false
    /// Bytes went to the client since the last flush.
    var unflushed = false
    /// The service's connection is paused until the client takes what was written.
    var blocked = false

    init(_ request: ClientRequest, _ call: any EdgeCall) {
        self.request = Traits(request)
        self.call = call
        self.reader = AnswerReader(toHEAD: request.method == .head)
        switch request.body {
        case .none: upload = .none
        case .length(let length): upload = length > 0 ? .length(length) : .none
        case .chunked: upload = .chunked(ChunkedBodyScanner(), received: 0)
        }
    }

    var uploadOpen: Bool {
        if case .none = upload { false } else { true }
    }

    var isConnected: Bool { upstream != .none }

    /// The answer's head, once it has come.
    var head: AnswerReader.Head? {
        switch answer {
        case .awaitingHead: nil
        case .buffering(let head, _), .streaming(let head, _): head
        }
    }

    var headSent: Bool {
        if case .streaming = answer { true } else { false }
    }

    /// Whether the client connection must end after the answer: the client said so, the gateway is
    /// stopping, or the rest of the request's body cannot be read past (chunked, too large to
    /// drop, or held back by a client waiting for a `100 Continue` it never got).
    func closesAfterAnswer(quiescing: Bool, discardLimit: Int) -> Bool {
        if request.closes || quiescing { return true }
        switch upload {
        case .none: return false
        case .length(let remaining): return remaining > discardLimit || (request.expectsContinue && !continued)
        case .chunked: return true
        }
    }

    // MARK: The request's body

    /// Sends on what has come of the body, as far as the service's socket takes it.
    /// - Returns: the answer to give instead when the body breaks its framing or the limit.
    mutating func sendBody(from pending: inout ByteBuffer, into actions: inout CircularBuffer<EdgeAction>) -> EdgeAnswer? {
        while pending.readableBytes > 0, upstreamWritable {
            switch upload {
            case .none:
                return nil
            case .length(let remaining):
                let count = min(remaining, pending.readableBytes)
                actions.append(.sendBody(pending.readSlice(length: count)!))
                upload = count == remaining ? .none : .length(remaining - count)
            case .chunked(var scanner, let received):
                let scan: ChunkedBodyScanner.Scan
                do {
                    scan = try scanner.scan(pending)
                } catch {
                    return .malformedBody
                }
                guard received + scan.data <= call.maxBodySize else { return .bodyTooLarge(limit: call.maxBodySize) }
                actions.append(.sendBody(pending.readSlice(length: scan.count)!))
                upload = scan.ends ? .none : .chunked(scanner, received: received + scan.data)
            }
        }
        return nil
    }

    // MARK: The answer

    /// Passes on what has come of the answer.
    mutating func relay(
        quiescing: Bool,
        discardLimit: Int,
        wholeAnswerLimit: Int,
        into actions: inout CircularBuffer<EdgeAction>
    ) -> Progress {
        while true {
            let step: AnswerReader.Step?
            do {
                step = try reader.next()
            } catch {
                return .failed(UpstreamExchangeError.malformed)
            }
            switch (step, answer) {
            case (nil, _), (.needMore?, _):
                return .going
            case (.head(let head)?, _):
                if case .length(let length) = head.body, length > 0, length <= wholeAnswerLimit {
                    answer = .buffering(head, nil)
                    continue
                }
                writeHead(head, body: nil, quiescing: quiescing, discardLimit: discardLimit, into: &actions)
                if head.endsWithHead { return .complete(head) }
            case (.body(var bytes, let ends)?, .buffering(let head, var whole)):
                answer = .buffering(head, nil)  // lets go of `whole`'s storage, which is appended to
                if whole == nil { whole = bytes } else { whole?.writeBuffer(&bytes) }
                guard ends, let whole else {
                    answer = .buffering(head, whole)
                    continue
                }
                writeHead(head, body: whole, quiescing: quiescing, discardLimit: discardLimit, into: &actions)
                return .complete(head)
            case (.body(let bytes, let ends)?, .streaming(let head, var transform)):
                answer = .streaming(head, .none)  // lets go of the scanner while it is changed
                defer { answer = .streaming(head, transform) }
                switch transform {
                case .none:
                    write(bytes, into: &actions)
                case .chunk:
                    var chunk = ByteBuffer()
                    chunk.reserveCapacity(bytes.readableBytes + 12)
                    chunk.writeString(String(bytes.readableBytes, radix: 16))
                    chunk.writeStaticString("\r\n")
                    chunk.writeImmutableBuffer(bytes)
                    chunk.writeStaticString("\r\n")
                    write(chunk, into: &actions)
                case .unchunk(var scanner):
                    var ranges: [Range<Int>] = []
                    do {
                        _ = try scanner.scan(bytes) { ranges.append($0) }
                    } catch {
                        return .failed(UpstreamExchangeError.malformed)
                    }
                    transform = .unchunk(scanner)
                    for range in ranges {
                        write(bytes.getSlice(at: bytes.readerIndex + range.lowerBound, length: range.count)!, into: &actions)
                    }
                }
                if ends { return .complete(head) }
            case (.body?, .awaitingHead):
                // The reader gives body bytes only after the head it gave.
                return .failed(UpstreamExchangeError.malformed)
            }
        }
    }

    /// Writes the answer's head, framed for the client's HTTP version: a body of unknown length
    /// goes in chunks to an HTTP/1.1 client, and runs to the connection's end for HTTP/1.0, which
    /// has no chunks.
    private mutating func writeHead(
        _ head: AnswerReader.Head,
        body: ByteBuffer?,
        quiescing: Bool,
        discardLimit: Int,
        into actions: inout CircularBuffer<EdgeAction>
    ) {
        let toHEAD = request.isHEAD
        var length = AnswerFraming.Length.none
        var transform = Transform.none
        var delimitedByClose = false
        switch toHEAD ? head.declared : head.body {
        case .none: break
        case .length(let count): length = .contentLength(count)
        case .chunked where toHEAD || !request.isHTTP10: length = .chunked
        case .untilClose where !toHEAD && !request.isHTTP10:
            length = .chunked
            transform = .chunk
        case .chunked, .untilClose:
            delimitedByClose = !toHEAD
            if head.body == .chunked, delimitedByClose { transform = .unchunk(ChunkedBodyScanner()) }
        }
        closes = delimitedByClose || closesAfterAnswer(quiescing: quiescing, discardLimit: discardLimit)
        let connection: AnswerFraming.Connection = closes ? .close : request.isHTTP10 ? .keepAlive : .unstated
        answer = .streaming(head, transform)
        actions.append(.writeAnswerHead(call, head, AnswerFraming(length: length, connection: connection), body: body))
        unflushed = true
    }

    private mutating func write(_ bytes: ByteBuffer, into actions: inout CircularBuffer<EdgeAction>) {
        actions.append(.write(bytes))
        unflushed = true
    }
}
