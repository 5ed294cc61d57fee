import NIOCore
import Synchronization

/// The frames waiting to be written to one realtime client, bounded.
///
/// Events are never reordered. A frame with a superseding key (a driver position) replaces a
/// queued one with the same key, which is dropped: the client gets the newest position. When the
/// queue is full, the oldest queued position is dropped to make room; when it is full of events
/// that must not be dropped, the client cannot keep up and the queue overflows: it ends, and the
/// connection is closed (WebSocket close code 4008).
package final class ClientQueue: Sendable {
    package struct Frame: Sendable {
        /// What a frame carries: text (every frame of `/v1/realtime` and SSE), or bytes (a
        /// Supabase Realtime binary broadcast).
        package enum Content: Sendable {
            case text(String)
            case binary(ByteBuffer)
        }

        /// The CloudEvent id and type of an event frame; `nil` for the gateway's own messages.
        package let eventID: String?
        package var eventType: String? = nil
        package let content: Content
        package let supersedingKey: String?
        package let enqueuedAt: ContinuousClock.Instant

        package init(eventID: String?, eventType: String? = nil, content: Content, supersedingKey: String?, enqueuedAt: ContinuousClock.Instant) {
            self.eventID = eventID
            self.eventType = eventType
            self.content = content
            self.supersedingKey = supersedingKey
            self.enqueuedAt = enqueuedAt
        }

        package init(eventID: String?, eventType: String? = nil, text: String, supersedingKey: String?, enqueuedAt: ContinuousClock.Instant) {
            self.init(eventID: eventID, eventType: eventType, content: .text(text), supersedingKey: supersedingKey, enqueuedAt: enqueuedAt)
        }
    }

    package enum Offer: Equatable {
        case queued
        /// Queued, and an older superseded frame was dropped.
        case queuedDroppingOlder
        /// Not queued: a position with nowhere to go while the queue is full of status events.
        case dropped
        /// The queue is full of events that must not be dropped: it has ended.
        case overflowed
        case closed
    }

    /// Why `next()` returned `nil`.
    package enum Ending: Equatable, Sendable {
        case closed, overflowed
        /// The gateway is shutting down: the client should reconnect (to another replica).
        case shuttingDown
    }

    /// What `poll()` finds.
    package enum Poll {
        case frame(Frame)
        case empty
        case ended(Ending)
    }

    private struct State {
        /// Grown as frames come: most clients' queues stay short or empty.
        package var frames = CircularBuffer<Frame>(initialCapacity: 1)
        package var ending: Ending?
        /// A task waiting in `next()`.
        package var waiter: CheckedContinuation<Frame?, Never>?
        /// Told when a frame comes to an empty queue and when the queue ends (`onReady(_:)`).
        package var wake: (@Sendable () -> Void)?

        package var count: Int { frames.count }

    }

    package let capacity: Int
    private let state = Mutex(State())

    package init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    package func offer(_ frame: Frame) -> Offer {
        var waiter: CheckedContinuation<Frame?, Never>?
        let (result, wake): (Offer, (@Sendable () -> Void)?) = state.withLock { state in
            if state.ending != nil { return (.closed, nil) }
            if let waiting = state.waiter {
                // The writer is idle and waiting: hand the frame over directly.
                state.waiter = nil
                waiter = waiting
                return (.queued, nil)
            }
            var result = Offer.queued
            if let key = frame.supersedingKey, let index = state.frames.firstIndex(where: { $0.supersedingKey == key }) {
                state.frames.remove(at: index)
                result = .queuedDroppingOlder
            } else if state.count >= capacity {
                if let index = state.frames.firstIndex(where: { $0.supersedingKey != nil }) {
                    state.frames.remove(at: index)
                    result = .queuedDroppingOlder
                } else if frame.supersedingKey != nil {
                    return (.dropped, nil)
                } else {
                    state.ending = .overflowed
                    state.frames.removeAll()
                    defer { state.wake = nil }
                    return (.overflowed, state.wake)
                }
            }
            state.frames.append(frame)
            return (result, state.count == 1 ? state.wake : nil)
        }
        wake?()
        waiter?.resume(returning: frame)
        return result
    }

    /// The next frame to write; `nil` once the queue has ended (see `ending`).
    package func next() async -> Frame? {
        await withCheckedContinuation { continuation in
            let ready: Frame?? = state.withLock { state in
                if let frame = state.frames.popFirst() { return .some(frame) }
                if state.ending != nil { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Ends the queue: a waiting `next()` returns `nil`, later offers are refused. `ending` says
    /// why, unless the queue had ended already.
    package func close(_ ending: Ending = .closed) {
        let (waiter, wake) = state.withLock { state in
            let wake = state.ending == nil ? state.wake : nil
            if state.ending == nil { state.ending = ending }
            state.wake = nil
            defer { state.waiter = nil }
            return (state.waiter, wake)
        }
        waiter?.resume(returning: nil)
        wake?()
    }

    /// The next frame without waiting for one, for a writer on an event loop (`onReady(_:)` says
    /// when to look again).
    package func poll() -> Poll {
        state.withLock { state in
            if let frame = state.frames.popFirst() { return .frame(frame) }
            return state.ending.map(Poll.ended) ?? .empty
        }
    }

    /// Has `wake` called whenever a frame comes to the queue while it is empty, and when the queue
    /// ends (an overflow included): a writer that polls until `empty` hears of the next frame. It
    /// must not offer to or close the queue itself. The queue lets go of `wake` once it has ended
    /// (a writer's handler it refers to is then freed with its connection).
    package func onReady(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wake = wake }
    }

    package var ending: Ending? { state.withLock { $0.ending } }
}
