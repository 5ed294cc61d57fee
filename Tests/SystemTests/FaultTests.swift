import Contracts
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

    /// The relay publishes, then marks its rows in the same transaction: killed between the two,
    /// its rows stay unmarked and the next relay publishes them again. Kafka then holds the event
    /// twice, under one event id, and a consumer through its inbox applies it once.
    @Test func aRelayKilledBetweenPublishAndMarkDeliversAgainAndTheEffectHappensOnce() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let effects = RegistrationEffects(stack: stack)
        try await effects.running {
            // Accounts made and published: the relay's producer knows the cluster.
            let before = await stack.signUp(for: .seconds(1), every: .milliseconds(100))
            try await stack.database.waitUntilOutboxIsPublished(schema: "auth", timeout: .seconds(60))
            // The brokers now answer 3 s late: the relay's records reach the log, their
            // acknowledgements do not, and auth is killed while it waits for them.
            try stack.kafka.setAllBrokers(roundTripTime: .seconds(3))
            let during = await stack.signUp(for: .seconds(1), every: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(1_500))
            await stack.killAuth()
            try stack.kafka.setAllBrokers(roundTripTime: .zero)
            let unmarked = try await stack.unpublishedOutboxKeys()
            let onKafka = try await stack.registrationRecords()
            let publishedNotMarked = Set(during.made).intersection(unmarked).intersection(onKafka.keys)
            #expect(!publishedNotMarked.isEmpty, "no account was on Kafka with its outbox row unmarked when auth died (\(during.made.count) made, \(unmarked.count) unmarked)")

            try await stack.startAuth()
            let after = await stack.signUp(for: .seconds(1), every: .milliseconds(100))
            let made = before.made + during.made + after.made
            #expect(before.refused.isEmpty && during.refused.isEmpty && after.refused.isEmpty)
            try await checkNothingLostOrDoubled(stack, made: made)
            let records = try await stack.registrationRecords()
            let deliveredTwice = publishedNotMarked.filter { (records[$0]?.count ?? 0) >= 2 }
            #expect(deliveredTwice == publishedNotMarked, "published before the kill, not published again after it: \(publishedNotMarked.subtracting(deliveredTwice))")
            let times = try await effects.times(forAtLeast: made.count)
            #expect(Set(made).isSubset(of: times.keys), "\(Set(made).subtracting(times.keys).count) accounts never took effect")
            let repeated = times.filter { $0.value != 1 }
            #expect(repeated.isEmpty, "registrations applied more than once: \(repeated)")
        }
        await stack.stop()
    }

    /// An event its consumer cannot apply is retried, parked on the dead-letter topic, and does
    /// not hold up the events behind it; once the consumer is fixed, `splash dlq replay` brings it
    /// back and it is applied, once.
    @Test func aPoisonEventIsDeadLetteredThePartitionFlowsAndReplayBringsItBackOnce() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let poison = UserRegistered(userId: UUID(), username: "poison", role: .customer, registeredAt: Date())
        let effects = RegistrationEffects(stack: stack, refusing: poison.userId)
        try await effects.running {
            let before = await stack.signUp(for: .seconds(1), every: .milliseconds(100))
            try await stack.publish(poison)
            // Behind it, on every partition (its own too), accounts keep being made and applied.
            let after = await stack.signUp(for: .seconds(2), every: .milliseconds(50))
            let made = before.made + after.made
            let times = try await effects.times(forAtLeast: made.count)
            #expect(Set(made).isSubset(of: times.keys), "\(Set(made).subtracting(times.keys).count) accounts behind the poison event never took effect")
            let poisonID = poison.userId.uuidString.lowercased()
            #expect(times[poisonID] == nil)
            let parked = try await stack.deadLetters(of: TopicCatalog.authUsers.name)
            #expect(parked.map(\.key) == [poisonID], "dead letters: \(parked.map(\.key))")

            try await effects.fix()
            let replay = try await stack.splash(["dlq", "replay", TopicCatalog.authUsers.name, "--brokers", stack.kafka.bootstrapServers])
            #expect(replay.contains("1 dead letter(s) replayed"), "\(replay)")
            let fixed = try await effects.times(forAtLeast: made.count + 1)
            #expect(fixed[poisonID] == 1)
            // Replayed once: a second replay finds nothing new.
            let again = try await stack.splash(["dlq", "replay", TopicCatalog.authUsers.name, "--brokers", stack.kafka.bootstrapServers])
            #expect(again.contains("0 dead letter(s) replayed"), "\(again)")
            try await Task.sleep(for: .seconds(1))
            #expect(try await effects.times(forAtLeast: made.count + 1)[poisonID] == 1)
        }
        await stack.stop()
    }

    /// A gateway replica SIGKILLed under a client's event stream: the client reconnects to the
    /// other replica with `Last-Event-ID` and gets every event after its last one, in order, none
    /// twice, while the user keeps changing their name.
    @Test func aGatewayKilledUnderAnEventStreamIsResumedOnTheOtherWithoutAGap() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let first = try await stack.startGateway()
        let second = try await stack.startGateway()
        defer { Task { await first.stop(); await second.stop() } }
        let (account, token) = try await stack.account()
        let profileEvent = ProfileUpdated.type
        let onFirst = EventStreamClient(url: "\(first.baseURL)/v1/events?channels=me", token: token)
        let watcher = EventStreamClient(url: "\(second.baseURL)/v1/events?channels=me", token: token)
        #expect(try await onFirst.waitForStatus() == 200)
        #expect(try await watcher.waitForStatus() == 200)
        // Both replicas follow the topic before the stream that matters begins.
        try await stack.rename(token, to: "sys_warm")
        _ = try await onFirst.event { $0.event == profileEvent }
        _ = try await watcher.event { $0.event == profileEvent }
        await watcher.stop()

        let renames = Task {
            for index in 1...30 {
                try await stack.rename(token, to: "sys_\(index)")
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        _ = try await onFirst.event { $0.event == profileEvent && $0.data.contains(#""username":"sys_8""#) }
        await first.kill()
        while !onFirst.hasEnded { try await Task.sleep(for: .milliseconds(10)) }
        // What arrived whole before the connection broke (an event ends with a blank line).
        var before = onFirst.events.filter { $0.event == profileEvent }
        if !onFirst.raw.hasSuffix("\n\n") { before.removeLast() }
        let lastID = try #require(before.last?.id)
        // The client backs off before reconnecting, as the apps do; the renames go on meanwhile.
        try await Task.sleep(for: .seconds(1))

        let resumed = EventStreamClient(url: "\(second.baseURL)/v1/events?channels=me", token: token, lastEventID: lastID)
        #expect(try await resumed.waitForStatus() == 200)
        try await renames.value
        _ = try await resumed.event { $0.event == profileEvent && $0.data.contains(#""username":"sys_30""#) }
        await onFirst.stop()
        await resumed.stop()

        let published = try await stack.profileUpdates(of: account)
        let received = before.compactMap(\.id) + resumed.events.filter { $0.event == profileEvent }.compactMap(\.id)
        #expect(published.count == 31)
        #expect(received == published, "received \(received.count) of \(published.count); missing \(Set(published).subtracting(received).count), twice \(received.count - Set(received).count)")
        await stack.stop()
    }
}
