import HTTPTypes
import NIOCore

/// The protocol state of one client connection at the gateway's edge, as a value: it takes the
/// connection's events (bytes read, a call admitted or refused, a service connected, answering,
/// failing or closing, the client slow, a deadline, a shutdown) and gives back actions for its
/// handler to perform (`nextAction()`), with no I/O of its own.
///
/// The client's bytes are read here before any HTTP parser: each request's head (`MessageHead`, a
/// strict reading of RFC 9112), then its body by length or by chunks. A request to a route the
/// `classify` function names is a proxied call: admitted by the handler's checks, then sent to the
/// service with its body streaming behind it as it comes (reading from the client pauses while the
/// service's socket is full; `Expect: 100-continue` is answered once the call is admitted), and
/// the answer passed back as it comes (pausing the service while the client is slow; HTTP/1.0
/// clients get it without chunks). Every other request passes on, as its bytes, to the handlers
/// behind (SwiftNIO's parser and the router).
///
/// Answers leave in the order requests came: a proxied request that follows a routed one waits
/// until the router's answer has ended (`routedAnswerEnded()`), and what follows a proxied one
/// waits in `pending`. A head outside the grammar is a 400 and ends the connection; an upgrade the
/// handler serves itself (`handsOver`: the realtime WebSockets) gives it the connection; another
/// upgrade, or the router's last request, leaves the rest of the connection to the router. Failures: 503 when
/// no connection to the service can be made (tried twice), 504 when no answer began in the route's
/// time, 502 when the exchange broke, a cut connection when it broke after the answer began. A call
/// without a body and with an idempotent method, met by a reused connection the service had
/// closed, is made again over a new one.
package struct EdgeStateMachine {
    private let limits: EdgeLimits
    /// The call a request head is for, when it goes to a service; `nil` for the router.
    private let classify: (ClientRequest) -> (any EdgeCall)?
    /// Whether the handler serves an upgrade request itself (`EdgeAction.handOver`).
    private let handsOver: (ClientRequest) -> Bool
    private var actions = CircularBuffer<EdgeAction>(initialCapacity: 16)
    /// The client's bytes, read into requests (reading pauses while read ones wait).
    private var client = ClientRequestReader()
    /// The proxied call in progress.
    private var exchange: ProxyExchange?
    /// The handler asked to read while more was not welcome.
    private var readHeld = false
    /// A graceful shutdown was asked for and has not been carried out yet.
    private var quiescing = false
    /// `pending` is being worked through (what ends a call meanwhile leaves the rest to it).
    private var handling = false
    private var clientWritable = true

    package init(
        limits: EdgeLimits = EdgeLimits(),
        handsOver: @escaping (ClientRequest) -> Bool = { _ in false },
        classify: @escaping (ClientRequest) -> (any EdgeCall)?
    ) {
        self.limits = limits
        self.handsOver = handsOver
        self.classify = classify
    }

    /// The next thing to do, in order; `nil` when there is nothing until the next event.
    package mutating func nextAction() -> EdgeAction? {
        actions.popFirst()
    }

    /// Whether `call` is the call in progress (a check, admission or connection that ends later
    /// may find it gone).
    package func isCurrent(_ call: any EdgeCall) -> Bool {
        exchange?.call === call
    }

    // MARK: The client's events

    package mutating func clientRead(_ bytes: ByteBuffer) {
        guard client.take(bytes, callInProgress: exchange != nil, into: &actions) else { return }
        if exchange != nil {
            if exchange?.isConnected == true, exchange?.uploadOpen == true { sendBody() }
        } else {
            handlePending()
        }
    }

    package mutating func clientReadComplete() {
        client.passedSinceReadComplete = false
        if client.passedOn == .yes { actions.append(.routerReadComplete) }
    }

    /// The handler would read more: it may now (`read`), or once the bytes waiting have gone.
    package mutating func readRequested() {
        if wantsInput {
            actions.append(.read)
        } else {
            readHeld = true
        }
    }

    package mutating func clientWritabilityChanged(isWritable: Bool) {
        clientWritable = isWritable
        guard exchange?.headSent == true, let blocked = exchange?.blocked else { return }
        if !isWritable, !blocked {
            exchange?.blocked = true
            exchange?.unflushed = false
            actions.append(.setUpstreamReading(false))
            actions.append(.flush)
        } else if isWritable, blocked {
            exchange?.blocked = false
            actions.append(.setUpstreamReading(true))
        }
    }

    /// The client is gone: a call in progress can only be cut off, and if nothing went on to the
    /// router, it never will.
    package mutating func clientClosed() {
        if client.passedOn == .notYet {
            client.passedOn = .never
            actions.append(.passedOn(false))
        }
        if exchange?.isConnected == true { actions.append(.closeUpstream) }
        exchange = nil
        actions.append(.cancelDeadline)
        client.close()
    }

    /// A graceful shutdown: once no proxied call is in progress, the handlers behind finish what
    /// they have and close the connection, or, when only proxied calls used it, it closes now.
    package mutating func quiesce() {
        quiescing = true
        quiesceIfIdle()
    }

    /// An answer of the router's has ended: a proxied request waiting for it can begin (on the
    /// next turn of the loop, after the answer's last bytes).
    package mutating func routedAnswerEnded() {
        client.routed = max(0, client.routed - 1)
        if client.routed == 0, client.waiting != nil { actions.append(.scheduleResume) }
    }

    /// SwiftNIO's parser refused what the client sent the router: a 400 when nothing else is
    /// being answered on the connection, which then closes.
    package mutating func routerRefusedRequest() {
        client.reading = .closing
        client.pending.clear()
        if exchange == nil, client.routed == 0 { actions.append(.answerUnreadable(headTooLarge: false)) }
        actions.append(.close)
    }

    /// Goes on with what a pipelining client sent meanwhile, then reads on.
    package mutating func resume() {
        handlePending()
        if client.passedSinceReadComplete {
            // Parts passed on outside a read need the signal a read's end gives.
            client.passedSinceReadComplete = false
            actions.append(.routerReadComplete)
        }
    }

    // MARK: Admission

    /// The call passed the handler's checks: it goes to its service (`now` starts its deadline).
    package mutating func admitted(now: NIODeadline) {
        guard exchange?.isConnected == false, let timeout = exchange?.call.timeout else { return }
        if exchange?.request.expectsContinue == true, exchange?.uploadOpen == true {
            actions.append(.writeContinue)
            exchange?.continued = true
        }
        exchange?.deadline = now + timeout
        connect(reuse: true)
    }

    /// The handler's checks refused the call with `problem`.
    package mutating func refused(_ problem: any Error) {
        guard exchange != nil else { return }
        answer(.refusal(problem))
    }

    /// The call was a CORS preflight, answered with `fields`.
    package mutating func answeredPreflight(_ fields: HTTPFields) {
        guard exchange != nil else { return }
        answer(.preflight(fields))
    }

    // MARK: The service's events

    package mutating func connected(reused: Bool, isWritable: Bool) {
        guard let call = exchange?.call else { return }
        exchange?.upstream = .connected(reused: reused)
        exchange?.upstreamWritable = isWritable
        guard exchange?.uploadOpen == true else {
            actions.append(.sendHead(call, flush: true))
            return resumeReading()
        }
        actions.append(.sendHead(call, flush: false))
        sendBody()
    }

    /// No connection could be made; one that failed to open (`retryable`) is tried once more, as
    /// nothing was sent over it.
    package mutating func connectFailed(_ error: any Error, retryable: Bool) {
        guard let attempts = exchange?.attempts else { return }
        if retryable, attempts < 2 { return connect(reuse: false) }
        fail(error)
    }

    package mutating func upstreamWritabilityChanged(isWritable: Bool) {
        guard exchange?.isConnected == true else { return }
        exchange?.upstreamWritable = isWritable
        if isWritable, exchange?.uploadOpen == true { sendBody() }
    }

    package mutating func upstreamRead(_ bytes: ByteBuffer) {
        guard exchange?.isConnected == true else { return }
        exchange?.reader.receive(bytes)
        relay()
    }

    package mutating func upstreamReadComplete() {
        guard exchange?.unflushed == true else { return }
        exchange?.unflushed = false
        actions.append(.flush)
    }

    /// The service's connection closed (`error` is `nil`) or failed.
    package mutating func upstreamClosed(_ error: (any Error)?) {
        guard let exchange, case .connected(let reused) = exchange.upstream else { return }
        guard let head = exchange.head else {
            if reused, exchange.request.isRetryable, error == nil || error is IOError || error is ChannelError {
                // Most likely closed while parked: the service never saw the call. Once more,
                // over a new connection.
                actions.append(.closeUpstream)
                self.exchange?.upstream = .none
                self.exchange?.reader = AnswerReader(toHEAD: exchange.request.isHEAD)
                return connect(reuse: false)
            }
            return fail(error ?? UpstreamExchangeError.closedBeforeResponse)
        }
        if head.body == .untilClose, error == nil, exchange.headSent {
            // The connection's end was the body's: the answer to the client ends too.
            actions.append(.closeUpstream)
            self.exchange?.upstream = .none
            if !exchange.request.isHTTP10 { actions.append(.write(ByteBuffer(staticString: "0\r\n\r\n"))) }
            actions.append(.flush)
            actions.append(.finished(exchange.call, status: head.status))
            return end()
        }
        fail(error ?? UpstreamExchangeError.closedMidResponse)
    }

    /// The connection's timer fired: a call whose answer has not begun by its deadline fails
    /// (504); the timer is set again for a later deadline.
    package mutating func deadlinePassed(now: NIODeadline) {
        guard exchange?.head == nil, let deadline = exchange?.deadline, deadline != .distantFuture else { return }
        if deadline <= now {
            fail(UpstreamExchangeError.timedOut)
        } else {
            actions.append(.armDeadline(deadline))
        }
    }

    // MARK: Reading requests

    /// Whether more of the client's bytes are welcome: not while read ones wait (a body for a
    /// service whose socket is full or not connected yet, requests pipelined behind a call).
    private var wantsInput: Bool {
        client.isClosing || client.pending.readableBytes == 0 || (exchange == nil && client.waiting == nil)
    }

    private mutating func resumeReading() {
        guard readHeld, wantsInput else { return }
        readHeld = false
        actions.append(.read)
    }

    /// Works through what has been read, up to a proxied call's start (what follows waits for
    /// its end), then reads on if it can.
    private mutating func handlePending() {
        guard !handling else { return }
        handling = true
        workThroughPending()
        handling = false
        resumeReading()
        quiesceIfIdle()
    }

    private mutating func workThroughPending() {
        while exchange == nil, let (request, call) = client.nextCall(quiescing: quiescing, classify: classify, handsOver: handsOver, into: &actions) {
            begin(request, call)
        }
    }

    private mutating func quiesceIfIdle() {
        guard quiescing, exchange == nil, !handling else { return }
        quiescing = false
        client.waiting = nil
        if client.passedOn == .yes {
            if case .heads = client.reading { client.reading = .passthrough }
            handlePending()
            actions.append(.quiesceRouter)
        } else {
            client.reading = .closing
            actions.append(.close)
        }
    }

    // MARK: The call

    private mutating func begin(_ request: ClientRequest, _ call: any EdgeCall) {
        exchange = ProxyExchange(request, call)
        if case .length(let length) = request.body, length > call.maxBodySize {
            return answer(.bodyTooLarge(limit: call.maxBodySize))
        }
        actions.append(.admit(call))
    }

    /// Takes a parked connection (unless `reuse` is off) or makes one.
    private mutating func connect(reuse: Bool) {
        guard let call = exchange?.call, let deadline = exchange?.deadline else { return }
        exchange?.attempts += 1
        actions.append(.connect(call, reuse: reuse, deadline: deadline))
    }

    /// Sends on what has come of the request's body, as far as the service's socket takes it
    /// (`upstreamWritabilityChanged` resumes), and flushes.
    private mutating func sendBody() {
        if let refusal = exchange?.sendBody(from: &client.pending, into: &actions) ?? nil { return giveUp(refusal) }
        actions.append(.flushUpstream)
        resumeReading()
    }

    private mutating func relay() {
        let progress = exchange?.relay(
            quiescing: quiescing,
            discardLimit: limits.discardLimit,
            wholeAnswerLimit: limits.wholeAnswerLimit,
            into: &actions
        )
        switch progress {
        case nil:
            return
        case .going?:
            if !clientWritable { clientWritabilityChanged(isWritable: false) }
        case .complete(let head)?:
            complete(head)
        case .failed(let error)?:
            fail(error)
        }
    }

    /// The answer has all come: its connection goes back to the pool, reusable when the request
    /// went whole and nothing came past the answer's end.
    private mutating func complete(_ head: AnswerReader.Head) {
        guard let call = exchange?.call else { return }
        let reusable = head.keepAlive && exchange?.reader.hasLeftover == false && exchange?.uploadOpen == false
        actions.append(.completed(call, status: head.status, reusableUpstream: reusable))
        end()
    }

    private mutating func fail(_ error: any Error) {
        giveUp(.upstreamFailed(UpstreamFailure(error), error))
    }

    /// Ends a call that cannot go on (the service failed it, or the request's body is malformed
    /// or past the limit): the service's connection is closed, and the client answered with
    /// `answer` — or, once it has the answer's head, with a connection cut short.
    private mutating func giveUp(_ answer: EdgeAnswer) {
        guard let call = exchange?.call else { return }
        if exchange?.isConnected == true {
            actions.append(.closeUpstream)
            exchange?.upstream = .none
        }
        if let head = exchange?.head, exchange?.headSent == true {
            exchange?.closes = true
            actions.append(.flush)
            actions.append(.finished(call, status: head.status))
            return end()
        }
        self.answer(answer)
    }

    /// Answers the call with the gateway's own `answer`, the service never having (or no longer)
    /// seen it.
    private mutating func answer(_ answer: EdgeAnswer) {
        guard let call = exchange?.call, let closes = exchange?.closesAfterAnswer(quiescing: quiescing, discardLimit: limits.discardLimit)
        else { return }
        exchange?.closes = closes
        actions.append(.answer(call, answer, closes: closes))
        end()
    }

    /// Goes on with the connection after a call: to the next request (past what is left of this
    /// one's body), or to its end.
    private mutating func end() {
        guard let exchange = exchange.take() else { return }
        guard !exchange.closes else { return closeAfterAnswer(lingering: exchange.uploadOpen) }
        if case .length(let remaining) = exchange.upload { client.reading = .discarding(remaining: remaining) }
        resume()
    }

    /// Ends the connection once the answer is out. While the client may still be sending a body,
    /// only the gateway's side closes first, and what comes is read and dropped for a while, so
    /// the client reads the answer rather than a reset.
    private mutating func closeAfterAnswer(lingering: Bool) {
        client.close()
        guard lingering else { return actions.append(.close) }
        actions.append(.closeOutput(linger: limits.lingerTime))
        resumeReading()
    }
}
