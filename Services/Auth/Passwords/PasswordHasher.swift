import Foundation
import HummingbirdBcrypt
import NIOPosix

/// Hashes and checks passwords with bcrypt, on NIO's blocking thread pool so a 250 ms hash never
/// holds a Swift concurrency thread.
///
/// Checking a password for an email nobody registered still runs one bcrypt comparison, against a
/// dummy hash of the same cost, so an unknown email and a wrong password take the same time.
struct PasswordHasher: Sendable {
    let cost: Int
    private let dummyHash: String

    /// - Parameter cost: bcrypt's cost, 4–31 (each step doubles the work).
    init(cost: Int) {
        precondition((4...31).contains(cost), "bcrypt cost must be 4–31; configuration validates it")
        self.cost = cost
        let filler = (0..<24).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }
        self.dummyHash = Bcrypt.hash(String(filler), cost: UInt8(cost))
    }

    func hash(_ password: String) async throws -> String {
        let cost = UInt8(cost)
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether `password` matches `hash`; with no hash (no such user) it does the same work and
    /// answers `false`.
    func verify(_ password: String, against hash: String?) async throws -> Bool {
        let candidate = hash ?? dummyHash
        let matches = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: candidate) }
        return hash != nil && matches
    }
}
