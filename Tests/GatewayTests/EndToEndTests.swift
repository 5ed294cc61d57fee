import AsyncHTTPClient
import Foundation
import Identity
import Kafka
import NIOHTTP1
import TestSupport
import Testing

/// The apps' path as it runs: the auth and gateway executables as processes, a real Postgres and
/// the test Kafka cluster, clients over sockets.
@Suite("Gateway end to end") struct EndToEndTests {
    @Test func aProfileChangeMadeThroughTheGatewayReachesWebSocketAndSSESubscribersWithinASecondWithoutEmail() async throws {
        let auth = try await Self.auth()
        defer { Task { await auth.stop() } }
        let gateway = try await Self.gateway(before: auth)
        defer { Task { await gateway.stop() } }

        let alice = try await signUp(gateway, username: "alice_\(UUID().uuidString.prefix(6).lowercased())")
        let bob = try await signUp(gateway, username: "bob_\(UUID().uuidString.prefix(6).lowercased())")

        let socket = RealtimeSocket(url: "ws://127.0.0.1:\(gateway.port)/v1/realtime?channels=profiles", token: alice.token)
        defer { Task { await socket.disconnect() } }
        _ = try await socket.message { $0["op"] as? String == "subscribed" }
        let stream = EventStreamClient(url: "\(gateway.baseURL)/v1/events?channels=profiles", token: alice.token)
        #expect(try await stream.waitForStatus() == 200)

        let newName = "bob_renamed_\(UUID().uuidString.prefix(4).lowercased())"
        #expect(try await rename(bob, to: newName, through: gateway) == .ok)
        let answeredAt = ContinuousClock.now

        let pushed = try await socket.message(within: .seconds(1)) {
            $0["type"] as? String == "auth.profile.updated.v1" && $0["subject"] as? String == bob.id
        }
        let socketLatency = ContinuousClock.now - answeredAt
        let data = try #require(pushed["data"] as? [String: Any])
        #expect(data["username"] as? String == newName)
        #expect(data["email"] == nil)
        let frame = try #require(socket.messages.first { $0.contains(bob.id) && $0.contains("auth.profile.updated.v1") })
        #expect(!frame.contains(bob.email))
        #expect(!frame.contains("@"))

        let sse = try await stream.event(within: .seconds(1)) { $0.event == "auth.profile.updated.v1" && $0.data.contains(bob.id) }
        #expect(sse.data.contains(newName))
        #expect(!sse.data.contains(bob.email))
        #expect(socketLatency < .seconds(1))
        await stream.stop()
        await socket.disconnect()
        await gateway.stop()
        await auth.stop()
    }

    /// Gateways scale out: each replica reads every event in a consumer group of its own, so a
    /// client on either replica hears what happened whichever replica it went through.
    @Test func realtimeClientsOnTwoGatewayReplicasReceiveTheSameEvents() async throws {
        let auth = try await Self.auth()
        let gateways = [try await Self.gateway(before: auth), try await Self.gateway(before: auth)]
        let alice = try await signUp(gateways[0], username: "alice_\(UUID().uuidString.prefix(6).lowercased())")
        let bob = try await signUp(gateways[1], username: "bob_\(UUID().uuidString.prefix(6).lowercased())")
        let sockets = gateways.map { RealtimeSocket(url: "ws://127.0.0.1:\($0.port)/v1/realtime?channels=profiles", token: alice.token) }
        for socket in sockets { _ = try await socket.message { $0["op"] as? String == "subscribed" } }

        // Bob renames himself through the first replica; Alice hears it on both.
        let newName = "bob_renamed_\(UUID().uuidString.prefix(4).lowercased())"
        #expect(try await rename(bob, to: newName, through: gateways[0]) == .ok)
        var ids: [String] = []
        for socket in sockets {
            let pushed = try await socket.message(within: .seconds(5)) {
                $0["type"] as? String == "auth.profile.updated.v1" && $0["subject"] as? String == bob.id
            }
            #expect((pushed["data"] as? [String: Any])?["username"] as? String == newName)
            ids.append(try #require(pushed["id"] as? String))
        }
        #expect(ids.count == 2 && ids[0] == ids[1], "the same event, by its id, on both replicas")
        for socket in sockets { await socket.disconnect() }
        for gateway in gateways { await gateway.stop() }
        await auth.stop()
    }

    static let issuer = "http://localhost:8080/auth/v1"

    /// What auth and the gateways share: the test cluster, topics made already.
    static func kafkaSettings() async throws -> [String: String] {
        ["KAFKA_BROKERS": try await TestKafka.shared.running().bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms"]
            .merging(ServiceHarness.consumerGroups()) { own, _ in own }
    }

    /// auth as a process on a database of its own.
    static func auth() async throws -> ServiceProcess {
        let database = try await TestPostgres.shared.makeDatabase()
        let (_, databaseURL) = try await database.makeServiceRole(schema: "auth", password: "e2e-auth")
        return try await ServiceProcess(
            "auth",
            environment: try await kafkaSettings().merging([
                "DATABASE_URL": databaseURL,
                "AUTH_JWT_KEY": SigningKey.generate().pem,
                "AUTH_JWT_ISSUER": issuer,
                "AUTH_BCRYPT_COST": "4",
                "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
                "OUTBOX_POLL_INTERVAL": "100ms",
            ]) { _, new in new }
        )
    }

    /// A gateway replica in front of `auth`.
    static func gateway(before auth: ServiceProcess) async throws -> ServiceProcess {
        try await ServiceProcess(
            "gateway",
            environment: try await kafkaSettings().merging([
                "GATEWAY_AUTH_URL": auth.baseURL,
                "GATEWAY_JWT_ISSUER": issuer,
            ]) { _, new in new }
        )
    }

    struct SignedUp {
        var id: String
        var email: String
        var token: String
    }

    func signUp(_ gateway: ServiceProcess, username: String) async throws -> SignedUp {
        let email = "\(username)@example.com"
        var request = HTTPClientRequest(url: "\(gateway.baseURL)/auth/v1/signup")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "apikey", value: "anon-key")
        request.body = .bytes(Data(#"{"email":"\#(email)","password":"correct horse 1","data":{"username":"\#(username)"}}"#.utf8))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect(response.status == .ok, "\(String(buffer: body))")
        let session = try #require(try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])
        let user = try #require(session["user"] as? [String: Any])
        return SignedUp(id: try #require(user["id"] as? String), email: email, token: try #require(session["access_token"] as? String))
    }

    /// `person` changes their username through `gateway` (auth's `PUT /user`).
    func rename(_ person: SignedUp, to username: String, through gateway: ServiceProcess) async throws -> HTTPResponseStatus {
        var request = HTTPClientRequest(url: "\(gateway.baseURL)/auth/v1/user")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(person.token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(Data(#"{"data":{"username":"\#(username)"}}"#.utf8))
        return try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status
    }
}
