import Foundation
import Testing
import TestSupport

/// Splash's promises under faults, on running processes: while accounts are being made, the
/// brokers go down or Postgres restarts, and afterwards an invariant check reads Postgres and
/// Kafka: every account made has its registration on Kafka, exactly one of them in effect (one
/// event id; a redelivery of the same event is allowed), and no registration names an account
/// that does not exist.
@Suite("Faults under load", .serialized)
struct FaultTests {
    /// Checks the invariant, once the relay has caught up.
    func checkNothingLostOrDoubled(_ stack: SystemStack, made: [String]) async throws {
        try await stack.database.waitUntilOutboxIsPublished(schema: "auth", timeout: .seconds(90))
        let accounts = try await stack.accountIDs()
        let registrations = try await stack.registrations()
        #expect(Set(made).isSubset(of: accounts), "accounts answered 200 are missing from auth.users")
        let unregistered = accounts.filter { registrations[$0] == nil }
        #expect(unregistered.isEmpty, "\(unregistered.count) of \(accounts.count) accounts have no registration on Kafka")
        let doubled = registrations.filter { $0.value.count > 1 }
        #expect(doubled.isEmpty, "\(doubled.count) accounts registered under more than one event id")
        let strays = Set(registrations.keys).subtracting(accounts)
        #expect(strays.isEmpty, "\(strays.count) registrations name no account")
    }

    @Test func everyBrokerDownFor10sUnderWritesLosesNoEventAndRefusesNoWrite() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let outage = Task {
            try await Task.sleep(for: .seconds(4))
            try stack.kafka.setAllBrokers(down: true)
            try await Task.sleep(for: .seconds(10))
            try stack.kafka.setAllBrokers(down: false)
        }
        let signUps = await stack.signUp(for: .seconds(18))
        try await outage.value
        // The outbox keeps the API independent of the brokers: nothing is refused.
        #expect(signUps.refused.isEmpty, "refused: \(signUps.refused)")
        let duringOutage = signUps.timeline.filter { $0.at > .seconds(5) && $0.at < .seconds(13) && $0.status == 200 }
        #expect(duringOutage.count > 20, "accounts made while the brokers were down: \(duringOutage.count)")
        try await checkNothingLostOrDoubled(stack, made: signUps.made)
        await stack.stop()
    }

    @Test func aPostgresRestartUnderWritesIsAFastRefusalThenRecoveryWithNothingLost() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let restart = Task {
            try await Task.sleep(for: .seconds(4))
            try await stack.postgres.restart(downFor: .seconds(2))
        }
        let signUps = await stack.signUp(for: .seconds(16))
        try await restart.value
        // While Postgres is away a sign-up is refused quickly with a 503 (never a 500, never a
        // hang past its deadline); once it is back, they succeed again.
        #expect(signUps.refused.allSatisfy { $0 == 503 }, "refusals other than 503: \(signUps.refused.filter { $0 != 503 })")
        let last = signUps.timeline.suffix(40)
        #expect(last.allSatisfy { $0.status == 200 }, "the last sign-ups after the restart: \(last.map(\.status))")
        try await checkNothingLostOrDoubled(stack, made: signUps.made)
        await stack.stop()
    }
}
