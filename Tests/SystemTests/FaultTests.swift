import Contracts
import Database
import Foundation
import LocalStack
import Logging
import NIOHTTP1
import PostgresNIO
import Synchronization
import TestSupport
import Testing

/// Splash's promises under faults, on running processes: while accounts, renames, edits or orders
/// are being made — or all the apps' calls at once, through the gateway — something breaks (the
/// brokers, Postgres, the network to Postgres, a relay, a consumer, a gateway or tracking replica),
/// and afterwards an invariant check reads Postgres and Kafka (`Support/Invariants.swift`). For accounts: every
/// account made has its registration on Kafka, exactly one of them in effect (one event id; a
/// redelivery of the same event is allowed), and no registration names an account that does not
/// exist. `docs/testing.md` lists each fault and what must hold. Each test has a Postgres, a
/// cluster and processes of its own, so `make test` runs a few side by side.
@Suite("Faults under load")
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
        // social's projections read the registrations too, through the outage.
        let social = try await stack.startSocial(
            databaseURL: try await stack.database.makeServiceRole(schema: "social", password: "system-social").url
        )
        defer { Task { await social.stop() } }
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
        // A service's own consumer came through too: social holds every account, each registration
        // applied once.
        let accounts = try await stack.accountIDs()
        try await waitUntilReady("social holding every account", timeout: .seconds(60)) {
            (try? await stack.database.count("social.profiles")) == accounts.count
        }
        let profiles = try await stack.database.withClient { client in
            try await client.query("SELECT user_id::text FROM social.profiles").collect().map { try $0.decode(String.self) }
        }
        #expect(Set(profiles) == accounts)
        #expect(try await stack.database.count("social.inbox", where: "type = '\(UserRegistered.type)'") == accounts.count)
        await social.stop()
        await stack.stop()
    }

    @Test func aPostgresRestartUnderWritesIsAFastRefusalThenRecoveryWithNothingLost() async throws {
        // auth's request deadline well inside the client's 5 s: a sign-up waiting for a connection
        // while Postgres is away is answered 503 at the deadline.
        let stack = try await SystemStack.start(authSettings: ["HTTP_REQUEST_TIMEOUT": "3s"])
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

    /// A transaction waiting between statements (as a relay waits for Kafka) when Postgres
    /// restarts: its next statement fails at once with `ConnectionLost`, rather than never
    /// returning, as PostgresNIO's own transaction would (its query on a closed connection is
    /// never answered), and the pool serves the next transaction on a new connection.
    @Test func aTransactionWaitingWhenPostgresRestartsFailsAtOnceInsteadOfHanging() async throws {
        let postgres = try await OwnPostgres.start()
        let database = try await postgres.makeDatabase()
        let client = PostgresClient(configuration: database.configuration)
        let logger = Logger(label: "system-test")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.query("CREATE TABLE waits (id int)")
            let waiting = Flag()
            let restart = Task {
                try await waitUntilReady("the transaction waiting", timeout: .seconds(10)) { waiting.isSet }
                try await postgres.restart(downFor: .seconds(1))
            }
            let start = ContinuousClock.now
            await #expect(throws: ConnectionLost.self) {
                try await client.withTransaction(settings: [], logger: logger) { connection in
                    try await connection.query("INSERT INTO waits VALUES (1)", logger: logger)
                    waiting.set()
                    try await Task.sleep(for: .seconds(4))
                    try await connection.query("INSERT INTO waits VALUES (2)", logger: logger)
                }
            }
            #expect(ContinuousClock.now - start < .seconds(20))
            try await restart.value
            // Rolled back, and the next transaction runs.
            try await client.withTransaction(settings: [], logger: logger) { connection in
                try await connection.query("INSERT INTO waits VALUES (3)", logger: logger)
            }
            let rows = try await client.query("SELECT id FROM waits").collect().map { try $0.decode(Int.self) }
            #expect(rows == [3])
            group.cancelAll()
        }
        await postgres.stop()
    }

    /// Postgres on a host of its own (a network namespace joined by a veth pair), cut off from auth
    /// for 10 s under sign-ups: packets dropped, no reset, so auth's open connections hang. Every
    /// sign-up is answered within auth's request deadline (a 503, never a 500, never a hang past
    /// it), sign-ups succeed again once the link is mended, and nothing is lost or doubled: an
    /// account whose answer was a 503 while its transaction committed later still has its one
    /// registration.
    @Test(.enabled(if: NetworkHost.isAvailable, "this machine does not let a test make network namespaces (root and iproute2's ip are needed)"))
    func aNetworkPartitionFromPostgresIsBoundedRefusalsThenRecoveryWithNothingLost() async throws {
        let host = try NetworkHost(subnet: Int.random(in: 0...255))
        defer { host.remove() }
        let stack = try await SystemStack.start(postgresHost: host, authSettings: ["HTTP_REQUEST_TIMEOUT": "3s"])
        defer { Task { await stack.stop() } }
        let partition = Task {
            try await Task.sleep(for: .seconds(4))
            try host.partition()
            try await Task.sleep(for: .seconds(10))
            try host.heal()
        }
        let signUps = await stack.signUp(for: .seconds(26))
        try await partition.value
        let during = signUps.timeline.filter { $0.at > .seconds(5) && $0.at < .seconds(14) }
        #expect(during.contains { $0.status == 503 }, "no sign-up was refused during the partition: \(during.map(\.status))")
        #expect(
            signUps.refused.allSatisfy { $0 == 503 },
            "refusals other than 503 (0: no answer within 5 s): \(signUps.timeline.filter { $0.status != 200 }.map { "\($0.at): \($0.status)" })"
        )
        let last = signUps.timeline.suffix(40)
        #expect(last.allSatisfy { $0.status == 200 }, "the last sign-ups after the link was mended: \(last.map(\.status))")
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
            // Accounts made and published, enough of them (60 over 6 partitions) that the relay's
            // producer has connected to every broker: a connection made once responses are late
            // would wait 3 s for its first answer before sending anything.
            let before = await stack.signUp(for: .seconds(3), every: .milliseconds(50))
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
            #expect(
                !publishedNotMarked.isEmpty,
                "no account was on Kafka with its outbox row unmarked when auth died (\(during.made.count) made, \(unmarked.count) unmarked)"
            )

            try await stack.startAuth()
            let after = await stack.signUp(for: .seconds(1), every: .milliseconds(100))
            let made = before.made + during.made + after.made
            #expect(before.refused.isEmpty && during.refused.isEmpty && after.refused.isEmpty)
            try await checkNothingLostOrDoubled(stack, made: made)
            let records = try await stack.registrationRecords()
            let deliveredTwice = publishedNotMarked.filter { (records[$0]?.count ?? 0) >= 2 }
            #expect(
                deliveredTwice == publishedNotMarked,
                "published before the kill, not published again after it: \(publishedNotMarked.subtracting(deliveredTwice))"
            )
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
            #expect(
                Set(made).isSubset(of: times.keys),
                "\(Set(made).subtracting(times.keys).count) accounts behind the poison event never took effect"
            )
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

    /// The same for a service's own consumer: social's projections of `auth.users`, with a bug
    /// that makes its table refuse one profile (a trigger standing in for it). social retries the
    /// registration, parks it on `auth.users.dlq`, and applies every other account, on every
    /// partition. Once the bug is fixed, `splash dlq replay auth.users` brings it back and social
    /// applies it once; in the end social's profiles are exactly auth's accounts, each applied once
    /// through social's inbox.
    @Test func socialsOwnConsumerParksAPoisonEventFlowsOnAndAppliesItOnceAfterTheFix() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let social = try await stack.startSocial(
            databaseURL: try await stack.database.makeServiceRole(schema: "social", password: "system-social").url
        )
        defer { Task { await social.stop() } }
        try await stack.database.withClient { client in
            try await client.query(
                """
                CREATE FUNCTION social.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN IF NEW.username = 'poison_user' THEN RAISE EXCEPTION 'social cannot take this profile'; END IF; RETURN NEW; END $$
                """
            )
            try await client.query(
                "CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON social.profiles FOR EACH ROW EXECUTE FUNCTION social.refuse_poison()"
            )
        }

        let poisoned = try await stack.account(username: "poison_user")
        var made: [String: String] = [:]
        for index in 1...30 { made[try await stack.account(username: "sys_\(index)")] = "sys_\(index)" }
        let others = made
        try await waitUntilReady("social applying every other account", timeout: .seconds(60)) {
            (try? await stack.database.count("social.profiles")) == others.count
        }
        try await waitUntilReady("the registration parked", timeout: .seconds(30)) {
            (try? await stack.deadLetters(of: TopicCatalog.authUsers.name))?.count == 1
        }
        let parked = try await stack.deadLetters(of: TopicCatalog.authUsers.name)
        #expect(parked.first?.subject == poisoned)
        #expect(try await stack.database.count("social.profiles", where: "user_id = '\(poisoned)'") == 0)

        // The fix is deployed, then the letter replayed: applied once; a second replay finds nothing.
        try await stack.database.withClient { client in _ = try await client.query("DROP TRIGGER refuse_poison ON social.profiles") }
        let replay = try await stack.splash(["dlq", "replay", TopicCatalog.authUsers.name, "--brokers", stack.kafka.bootstrapServers])
        #expect(replay.contains("1 dead letter(s) replayed"), "\(replay)")
        try await waitUntilReady("the replayed registration applied", timeout: .seconds(30)) {
            (try? await stack.database.count("social.profiles", where: "user_id = '\(poisoned)' AND username = 'poison_user'")) == 1
        }
        #expect(
            try await stack.splash(["dlq", "replay", TopicCatalog.authUsers.name, "--brokers", stack.kafka.bootstrapServers]).contains(
                "0 dead letter(s) replayed"
            )
        )

        // social's profiles are exactly auth's accounts with their names, each registration applied once.
        let profiles = try await stack.database.withClient { client in
            try await client.query("SELECT user_id::text, username FROM social.profiles").collect().map { try $0.decode((String, String).self) }
        }
        #expect(Dictionary(uniqueKeysWithValues: profiles) == others.merging([poisoned: "poison_user"]) { $1 })
        #expect(try await stack.database.count("social.inbox", where: "type = '\(UserRegistered.type)'") == others.count + 1)
        await social.stop()
        await stack.stop()
    }

    /// A poison event on each render topic, for the consumer that reads it: a render job a worker
    /// cannot claim (a bug in edit-render, a trigger on its table standing in for it) and a
    /// finished edit social's projections cannot record (a trigger refusing one person's edits).
    /// Each is retried, parked on its dead-letter topic, and the jobs and results behind it flow
    /// on; once fixed, `splash dlq replay` brings each back, and it takes effect once: the job
    /// renders, its result reaches social, every edit ends completed with one result event and one
    /// file, and social records each once.
    @Test func poisonRenderJobsAndResultsAreParkedTheRestFlowsAndReplayAppliesEachOnce() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let catalog = try await stack.startPhotoCatalog()
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("system-render-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: blobs) }
        let render = try await stack.startEditRender(
            databaseURL: try await stack.database.makeServiceRole(schema: "render", password: "system-render").url,
            photoCatalog: catalog,
            blobs: blobs
        )
        let social = try await stack.startSocial(
            databaseURL: try await stack.database.makeServiceRole(schema: "social", password: "system-social").url
        )
        defer {
            Task {
                await social.stop()
                await render.stop()
                await catalog.stop()
            }
        }
        let (_, token) = try await stack.account()
        let (blocked, blockedToken) = try await stack.account()
        try await stack.database.withClient { client in
            try await client.query(
                """
                CREATE FUNCTION render.refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN IF NEW.status = 'rendering' AND NEW.output->>'longestEdge' = '777' THEN RAISE EXCEPTION 'edit-render cannot take this job'; END IF; RETURN NEW; END $$
                """
            )
            try await client.query("CREATE TRIGGER refuse_claim BEFORE UPDATE ON render.edits FOR EACH ROW EXECUTE FUNCTION render.refuse_claim()")
            try await client.query(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE FUNCTION social.refuse_edit() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN IF NEW.user_id = '\(UUID(uuidString: blocked)!.uuidString.lowercased())' THEN RAISE EXCEPTION 'social cannot take this edit'; END IF; RETURN NEW; END $$
                        """
                )
            )
            try await client.query("CREATE TRIGGER refuse_edit BEFORE INSERT ON social.edits FOR EACH ROW EXECUTE FUNCTION social.refuse_edit()")
        }
        func edit(_ token: String, longestEdge: Int) async throws -> String {
            let body = try await stack.call(
                render.baseURL,
                .POST,
                "/v1/edits",
                token: token,
                json: [
                    "source": ["unsplashPhotoId": "mate-aqua-01"], "filters": [["name": "sepia"]], "output": ["longestEdge": longestEdge],
                ],
                headers: [("Idempotency-Key", UUID().uuidString)],
                expecting: 202
            )
            guard let id = body["id"] as? String else { throw SystemStackError.unexpectedAnswer("\(body)") }
            return id
        }
        var plain: [String] = []
        for _ in 0..<6 { plain.append(try await edit(token, longestEdge: 320)) }
        let poisonJob = try await edit(token, longestEdge: 777)
        let poisonResult = try await edit(blockedToken, longestEdge: 320)
        // Behind both, on every partition.
        for _ in 0..<12 { plain.append(try await edit(token, longestEdge: 320)) }

        let others = plain.count
        try await waitUntilReady("every other edit rendered and recorded by social", timeout: .seconds(120)) {
            let rendered = try? await stack.database.count("render.edits", where: "status = 'completed'")
            let recorded = try? await stack.database.count("social.edits")
            return rendered == others + 1 && recorded == others
        }
        try await waitUntilReady("both poison events parked", timeout: .seconds(60)) {
            let jobs = try? await stack.deadLetters(of: TopicCatalog.renderJobs.name)
            let results = try? await stack.deadLetters(of: TopicCatalog.renderResults.name)
            return jobs?.count == 1 && results?.count == 1
        }
        let parkedJob = try await stack.deadLetters(of: TopicCatalog.renderJobs.name)
        let parkedResult = try await stack.deadLetters(of: TopicCatalog.renderResults.name)
        #expect(String(decoding: parkedJob[0].data, as: UTF8.self).contains(poisonJob))
        #expect(String(decoding: parkedResult[0].data, as: UTF8.self).contains(poisonResult))
        #expect(try await stack.database.count("render.edits", where: "id = '\(poisonJob)' AND status = 'queued'") == 1)
        #expect(try await stack.database.count("social.edits", where: "edit_id = '\(poisonResult)'") == 0)

        // The fixes are deployed, then the letters replayed: each applied once.
        try await stack.database.withClient { client in
            try await client.query("DROP TRIGGER refuse_claim ON render.edits")
            try await client.query("DROP TRIGGER refuse_edit ON social.edits")
        }
        for topic in [TopicCatalog.renderJobs.name, TopicCatalog.renderResults.name] {
            let replay = try await stack.splash(["dlq", "replay", topic, "--brokers", stack.kafka.bootstrapServers])
            #expect(replay.contains("1 dead letter(s) replayed"), "\(topic): \(replay)")
        }
        let all = plain.count + 2
        try await waitUntilReady("every edit rendered and recorded by social", timeout: .seconds(60)) {
            let rendered = try? await stack.database.count("render.edits", where: "status = 'completed'")
            let recorded = try? await stack.database.count("social.edits")
            return rendered == all && recorded == all
        }
        for topic in [TopicCatalog.renderJobs.name, TopicCatalog.renderResults.name] {
            #expect(
                try await stack.splash(["dlq", "replay", topic, "--brokers", stack.kafka.bootstrapServers]).contains("0 dead letter(s) replayed")
            )
        }
        try await Task.sleep(for: .seconds(1))
        // One final state, one result event and one file per edit; social recorded each once.
        #expect(try await stack.database.count("render.edits", where: "status <> 'completed'") == 0)
        #expect(try await stack.database.count("render.outbox", where: "type = '\(EditCompleted.type)'") == all)
        #expect(try await stack.database.count("render.outbox", where: "type = '\(EditFailed.type)'") == 0)
        #expect(try await stack.database.count("social.edits") == all)
        #expect(try await stack.database.count("social.inbox", where: "type = '\(EditCompleted.type)'") == all)
        let files = try FileManager.default.subpathsOfDirectory(atPath: blobs.path).filter { $0.hasSuffix("edited.jpg") }
        #expect(files.count == all)
        await social.stop()
        await render.stop()
        await catalog.stop()
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
        defer {
            Task {
                await first.stop()
                await second.stop()
            }
        }
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
        #expect(
            received == published,
            "received \(received.count) of \(published.count); missing \(Set(published).subtracting(received).count), twice \(received.count - Set(received).count)"
        )
        await stack.stop()
    }

    /// Two tracking replicas take orders and the kitchen's moves, and one is SIGKILLed mid-work;
    /// the clients go on with the other (a placement retried under its `Idempotency-Key`, a move
    /// whose answer was lost read back). Afterwards every order is once in Postgres, and on Kafka
    /// has one placement and one status change per move of its history, in order, none twice in
    /// effect, and no event names an order that does not exist.
    @Test func aTrackingReplicaKilledMidWorkLosesNoOrderAndNoMoveAndDoublesNone() async throws {
        let stack = try await SystemStack.start()
        defer { Task { await stack.stop() } }
        let databaseURL = try await stack.database.makeServiceRole(schema: "tracking", password: "system-tracking").url
        let doomed = try await stack.startTracking(databaseURL: databaseURL)
        let survivor = try await stack.startTracking(databaseURL: databaseURL)
        defer { Task { await survivor.stop() } }
        let (restaurant, kitchen) = try await stack.restaurant(at: survivor.baseURL)
        var people: [(id: String, token: String)] = []
        for _ in 0..<4 { people.append(try await stack.account(role: "customer")) }
        let customers = people

        let killed = Flag()
        /// Sends to the replica `turn` picks while it lives, else to the survivor; a request the
        /// dead replica never answered goes again to the survivor.
        @Sendable func send(
            _ turn: Int,
            _ method: HTTPMethod,
            _ path: String,
            token: String,
            json: Any,
            headers: [(String, String)]
        ) async throws -> (status: Int, body: [String: Any]) {
            if turn % 2 == 0, !killed.isSet,
                let answer = try? await stack.call(doomed.baseURL, method, path, token: token, json: json, headers: headers)
            {
                return answer
            }
            return try await stack.call(survivor.baseURL, method, path, token: token, json: json, headers: headers)
        }
        let start = ContinuousClock.now
        let killer = Task {
            try await Task.sleep(for: .seconds(3))
            await doomed.kill()
            killed.set()
        }
        let placed = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, customer) in customers.enumerated() {
                group.addTask {
                    var orders: [String] = []
                    var turn = index
                    while ContinuousClock.now - start < .seconds(7) {
                        let key = UUID().uuidString
                        turn += 1
                        let order = try await send(
                            turn,
                            .POST,
                            "/v1/orders",
                            token: customer.token,
                            json: [
                                "restaurantId": restaurant, "items": [["menuItemId": "m1", "quantity": 2]],
                                "dropoff": ["address": "Senate Square", "lat": 60.1694, "lng": 24.9526],
                            ],
                            headers: [("Idempotency-Key", key)]
                        )
                        try #require(order.status == 201, "placing: \(order.status) \(order.body)")
                        let id = order.body["id"] as! String
                        orders.append(id)
                        var version = order.body["version"] as! Int
                        for status in ["accepted", "preparing", "ready_for_pickup"] {
                            turn += 1
                            let moved = try await send(
                                turn,
                                .POST,
                                "/v1/orders/\(id)/transitions",
                                token: kitchen.token,
                                json: ["to": status],
                                headers: [("If-Match", "\"\(version)\"")]
                            )
                            if moved.status == 200 {
                                version = moved.body["version"] as! Int
                            } else {
                                // The move may have been made by the replica that died before answering.
                                let now = try await stack.call(survivor.baseURL, .GET, "/v1/orders/\(id)", token: kitchen.token, expecting: 200)
                                try #require(
                                    now["status"] as? String == status,
                                    "moving to \(status): \(moved.status) \(moved.body), the order is \(now["status"] ?? "?")"
                                )
                                version = now["version"] as! Int
                            }
                        }
                    }
                    return orders
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        try await killer.value
        #expect(placed.count > 20, "orders placed: \(placed.count)")

        // The invariant, once the survivor's relay has published what the dead one left.
        try await stack.checkOrders(placed: placed)
        await stack.stop()
    }
}

/// A switch one task turns on and others read.
final class Flag: Sendable {
    private let value = Mutex(false)

    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
