/// Tests that run a whole stack of service processes (five or six services, a broker, Postgres,
/// sometimes an S3 server) take turns: on two cores, two such stacks starting at once beside the
/// rest of the suite starve the timing-sensitive tests of other suites (a refresh-token reuse
/// window, a rate budget's window, a client's read timeout). Everything else still runs beside
/// the one stack.
package actor WholeStackTurns {
    private static let shared = WholeStackTurns()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` once no other whole-stack test is running.
    package static func take<Result: Sendable>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async throws -> Result {
        await shared.acquire()
        do {
            let result = try await body()
            await shared.release()
            return result
        } catch {
            await shared.release()
            throw error
        }
    }

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
