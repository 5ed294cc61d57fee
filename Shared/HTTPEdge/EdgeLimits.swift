import NIOCore

/// The limits a client connection's `EdgeStateMachine` applies.
package struct EdgeLimits: Sendable {
    /// Answers with a `Content-Length` up to this size are read whole before they are passed
    /// on, which frees their connection at once and lets a service that breaks off still be
    /// answered with a 502; larger ones, and those of unknown length, stream.
    package var wholeAnswerLimit = 64 << 10
    /// The body of a refused request, when its `Content-Length` is at most this, is read and
    /// dropped so the connection can carry the next request; a larger or chunked one ends the
    /// connection after the answer. Generous: a client still sending the body of an upload
    /// refused as too large (AsyncHTTPClient, say) fails on the connection's end rather than
    /// reading the 413 before it.
    package var discardLimit = 64 << 20
    /// How long a connection that answered before the client had sent all of its body keeps
    /// reading (and dropping) what comes after its answer, so that the client reads the answer
    /// rather than a reset (RFC 9112 §9.6).
    package var lingerTime = TimeAmount.seconds(2)

    package init() {}
}
