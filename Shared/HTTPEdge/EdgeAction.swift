import Foundation
import HTTPTypes
import NIOCore
import NIOPosix

/// A proxied call as the edge's state machine needs to know it: what the route it goes to allows.
/// The handler's own object (with its request id, its route group and whatever it renders answers
/// with) comes back to it in the actions that concern the call.
package protocol EdgeCall: AnyObject {
    /// The largest request body the route takes, in bytes (a chunked body's data is counted).
    var maxBodySize: Int { get }
    /// How long the service may take to begin its answer.
    var timeout: TimeAmount { get }
}

/// What `EdgeStateMachine` asks its handler to do, in order. Every action is I/O or a check the
/// machine cannot make itself (a token, a rate limit, a connection pool): the handler performs it
/// and tells the machine what came of it through the machine's events.
package enum EdgeAction {
    // MARK: The client
    /// Read more of the client's bytes (a read the machine held back goes on).
    case read
    /// Write bytes of an answer to the client, unflushed.
    case write(ByteBuffer)
    /// Write `100 Continue`, flushed.
    case writeContinue
    case flush
    /// Write the head of the service's answer as the client gets it, framed as `framing` says,
    /// and `body` after it when the whole answer was kept (a small one), unflushed.
    case writeAnswerHead(any EdgeCall, AnswerReader.Head, AnswerFraming, body: ByteBuffer?)
    /// Write a whole answer of the gateway's own to the call (with `Connection: close` when
    /// `closes`), flushed; the call has ended with it.
    case answer(any EdgeCall, EdgeAnswer, closes: Bool)
    /// Write a 400 (`headTooLarge`: 431) for bytes that are no request; the connection ends.
    case answerUnreadable(headTooLarge: Bool)
    /// The call has ended with the service's answer, of this status (or cut off after its head).
    case finished(any EdgeCall, status: Int)
    /// The service's answer has all gone to the client: give its connection back to the call's
    /// pool (parked when `reusableUpstream`, closed otherwise), flush, and record the call.
    case completed(any EdgeCall, status: Int, reusableUpstream: Bool)
    case close
    /// The request upgrades the connection to a protocol the handler serves itself (a realtime
    /// WebSocket): from here on the connection is the handler's, with `rest` (what the client sent
    /// after the head) its first bytes. The machine has no more to do with it.
    case handOver(ClientRequest, rest: ByteBuffer)
    /// Close the sending side only, and the whole connection once `linger` has passed, reading
    /// and dropping what the client still sends meanwhile.
    case closeOutput(linger: TimeAmount)

    // MARK: The handlers behind (SwiftNIO's parser and the router)
    /// Pass bytes of a request the gateway answers itself to the handlers behind.
    case passToRouter(ByteBuffer)
    /// Tell the handlers behind that a read has ended.
    case routerReadComplete
    /// Bytes are about to go on to the handlers behind for the first time (`true`: the handler
    /// sets them up now), or none ever will (`false`: the connection ended, or was handed over).
    /// The router serves the connection only in the first case.
    case passedOn(Bool)
    /// Let the handlers behind finish what they have and close (a graceful shutdown).
    case quiesceRouter
    /// Call `resume()` on the next turn of the event loop (a routed answer's last bytes are still
    /// on their way through the pipeline).
    case scheduleResume

    // MARK: The call
    /// Check the call (CORS preflight, token, rate limit, a service to send it to), then answer
    /// with `admitted(now:)`, `refused(_:)` or `answeredPreflight(_:)`, at once or later.
    case admit(any EdgeCall)
    /// Make sure the connection's timer fires by `deadline` (then `deadlinePassed(now:)`).
    case armDeadline(NIODeadline)
    case cancelDeadline

    // MARK: The service
    /// Take a parked connection to the call's service (unless `reuse` is off) or open one, then
    /// answer with `connected(reused:isWritable:)` or `connectFailed(_:retryable:)`; and make sure
    /// the connection's timer fires by `deadline` (then `deadlinePassed(now:)`).
    case connect(any EdgeCall, reuse: Bool, deadline: NIODeadline)
    /// Write the head of the call's request as the service gets it (and flush it when `flush`:
    /// no body follows).
    case sendHead(any EdgeCall, flush: Bool)
    /// Write bytes of the request's body to the service, unflushed.
    case sendBody(ByteBuffer)
    case flushUpstream
    /// Pause or resume reading the service's answer (a client that is slow to take it).
    case setUpstreamReading(Bool)
    /// Let go of the service's connection and close it (it may have closed already).
    case closeUpstream
}

/// An answer the gateway writes itself for a call, instead of the service's.
package enum EdgeAnswer {
    /// The handler's checks refused the call: its problem.
    case refusal(any Error)
    /// A CORS preflight, answered `204` with these fields.
    case preflight(HTTPFields)
    /// The body is larger than the route takes (413).
    case bodyTooLarge(limit: Int)
    /// The request's chunked body breaks its framing (400).
    case malformedBody
    /// The service could not be reached, did not answer in time, or broke the exchange
    /// (503, 504, 502).
    case upstreamFailed(UpstreamFailure, any Error)
}

/// How the head of a service's answer is framed for the client.
package struct AnswerFraming: Equatable, Sendable {
    package enum Length: Equatable, Sendable {
        /// No body follows, or it runs to the connection's end (HTTP/1.0).
        case none
        case contentLength(Int)
        case chunked
    }

    package enum Connection: Equatable, Sendable {
        /// Nothing said: an HTTP/1.1 connection stays open.
        case unstated
        /// `Connection: keep-alive`, which an HTTP/1.0 client needs to keep it.
        case keepAlive
        /// `Connection: close`: the connection ends after this answer.
        case close
    }

    package var length: Length
    package var connection: Connection

    package init(length: Length, connection: Connection) {
        self.length = length
        self.connection = connection
    }
}

/// How an exchange with a service failed, as far as the client is concerned.
package enum UpstreamFailure: String, Sendable {
    /// No connection could be made: 503, and safe to retry.
    case unreachable
    /// Connected, but no answer in time: 504.
    case timeout
    /// The exchange broke: 502.
    case broken

    package init(_ error: any Error) {
        if let error = error as? UpstreamExchangeError {
            self = error == .timedOut ? .timeout : .broken
        } else if let error = error as? UpstreamPoolError {
            self = error == .busy ? .unreachable : .broken
        } else if error is NIOConnectionError
            || (error as? IOError).map({ [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH].contains($0.errnoCode) }) == true
        {
            self = .unreachable
        } else if let error = error as? ChannelError, case .connectTimeout = error {
            self = .unreachable
        } else {
            self = .broken
        }
    }
}

/// How an exchange with a service failed.
package enum UpstreamExchangeError: Error, Equatable {
    /// The connection ended before any byte of an answer: on a reused connection, most likely
    /// the upstream closed it while it sat idle (so the request was never handled).
    case closedBeforeResponse
    /// The connection ended in the middle of the answer.
    case closedMidResponse
    /// No answer began before the route's deadline.
    case timedOut
    /// The answer is not HTTP/1 as we know it.
    case malformed
}

/// Why a pool of connections to a service gave none.
package enum UpstreamPoolError: Error, Equatable {
    /// The upstream's URL cannot be served (configuration).
    case unsupported(String)
    /// As many connections as allowed are open to the upstream: the request is shed (503).
    case busy
}
