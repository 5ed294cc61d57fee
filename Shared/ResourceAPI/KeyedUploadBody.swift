import Crypto
import NIOCore
import ServiceKit
import Synchronization

/// An upload's body, passed on chunk by chunk, with the request's `Idempotency-Key`: when there is
/// a key, the bytes are hashed on the way, so an upload too large to hold in memory can still be
/// told from a retry. Read `idempotency` once the body has been consumed to its end.
package struct KeyedUploadBody<Base: AsyncSequence<ByteBuffer, any Error> & Sendable>: AsyncSequence, Sendable {
    package typealias Element = ByteBuffer

    private let base: Base
    private let key: String?
    private let digest: Digest?

    /// - Parameter key: the request's checked key (`IdempotencyKey.optionalKey(of:what:)`).
    package init(_ base: Base, key: String?) {
        self.base = base
        self.key = key
        digest = key == nil ? nil : Digest()
    }

    /// The key and the hash of every byte passed on; `nil` without a key.
    package var idempotency: IdempotencyKey? {
        guard let key, let digest else { return nil }
        return IdempotencyKey(key: key, requestHash: digest.hex)
    }

    package func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), digest: digest)
    }

    package struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let digest: Digest?

        package mutating func next() async throws -> ByteBuffer? {
            guard let chunk = try await base.next() else { return nil }
            digest?.update(chunk)
            return chunk
        }
    }

    final class Digest: Sendable {
        private let state = Mutex(SHA256())

        func update(_ chunk: ByteBuffer) {
            state.withLock { hasher in
                chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            }
        }

        var hex: String { state.withLock { $0.finalize() }.hexEncoded }
    }
}
