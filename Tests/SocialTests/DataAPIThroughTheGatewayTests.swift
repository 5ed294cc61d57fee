import Foundation
import LocalStack
import NIOHTTP1
import PostgresNIO
import TestSupport
import Testing

/// `/rest/v1` as the apps reach it: supabase-py's PostgREST client, unchanged, through the gateway
/// to auth's, social's and tracking's tables (as processes on a real Postgres and the test Kafka
/// cluster); a like written there is the typed API's like, with its event.
@Suite("The data API through the gateway") struct DataAPIThroughTheGatewayTests {
    @Test func supabasePyReadsAndWritesEveryTableAndALikeIsTheTypedAPIsLike() async throws {
        try await WholeStackTurns.take {
            let stack = try await ThroughTheGatewayTests.Stack(tracking: true)
            do {
                try await run(stack)
            } catch {
                Issue.record("\(error)")
            }
            await stack.stop()
        }
    }

    /// The apps' own tables (`liked_photos`, `posts` by the Upload System's names, `users`,
    /// `profiles` written), each app's calls verbatim with Swift's upper-case UUIDs, and the
    /// hostile cases; each write is the typed API's, with its event.
    @Test func theAppsOwnTablesAnswerTheirCallsVerbatimAndRefuseTheHostileOnes() async throws {
        try await WholeStackTurns.take {
            let stack = try await ThroughTheGatewayTests.Stack()
            do {
                let tag = UUID().uuidString.prefix(6).lowercased()
                let ana = try await stack.signUp("ana_\(tag)")
                let ben = try await stack.signUp("ben_\(tag)")
                let script = try #require(Bundle.module.url(forResource: "supabase_app_tables", withExtension: "py", subdirectory: "Fixtures"))
                let image = SocialHarness.fixtures.appendingPathComponent("FreshFlower.jpg")
                let output = try await ProcessCommand(
                    URL(fileURLWithPath: "/usr/bin/env"),
                    ["python3", script.path, stack.gateway.baseURL, "anon-key", "correct horse 1", ana.email, ben.email, image.path]
                ).runToCompletion()
                #expect(output.contains("all steps passed"), "\(output)")

                // The writes were the typed API's: their events, as the typed routes publish them.
                try await stack.database.waitUntilOutboxIsPublished(schema: "social")
                try await stack.database.waitUntilOutboxIsPublished(schema: "auth")
                let social = try await TestKafka.shared.events(on: "social.activity", key: ana.id).map(\.type)
                #expect(social.filter { $0 == "social.photo.liked.v1" }.count == 2, "\(social)")
                #expect(social.filter { $0 == "social.photo.unliked.v1" }.count == 2, "\(social)")
                #expect(social.contains("social.post.created.v1"), "\(social)")
                let auth = try await TestKafka.shared.events(on: "auth.users", key: ana.id).map(\.type)
                #expect(auth.filter { $0 == "auth.user.onboarding-completed.v1" }.count == 1, "\(auth)")
                #expect(auth.contains("auth.profile.updated.v1"), "\(auth)")
            } catch {
                Issue.record("\(error)")
            }
            await stack.stop()
        }
    }

    private func run(_ stack: ThroughTheGatewayTests.Stack) async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let ana = try await stack.signUp("ana_\(tag)")
        let ben = try await stack.signUp("ben_\(tag)")
        let owner = try await stack.signUp("owner_\(tag)")
        let boss = try await stack.signUp("boss_\(tag)")
        try await stack.database.withClient { client in
            try await client.query("UPDATE auth.users SET role = 'restaurant' WHERE id = \(UUID(uuidString: owner.id)!)")
            try await client.query("UPDATE auth.users SET role = 'admin' WHERE id = \(UUID(uuidString: boss.id)!)")
        }
        // A token with the admin role: signed in again after the change.
        let signIn = try await stack.call(
            .POST,
            "/auth/v1/token?grant_type=password",
            token: nil,
            json: #"{"email":"\#(boss.email)","password":"correct horse 1"}"#,
            headers: [("apikey", "anon-key")]
        )
        let admin = try #require(signIn.json["access_token"] as? String, "\(signIn.text)")
        let restaurant = try await stack.call(
            .POST,
            "/v1/restaurants",
            token: admin,
            json: """
                {"ownerId":"\(owner.id)","name":"Kitchen \(tag)","cuisine":"pizza","address":"Kaivokatu 1","location":{"lat":60.1710,"lng":24.9414},
                 "isOpen":true,"menu":[{"id":"m1","name":"Margherita","priceCents":1290,"available":true}]}
                """
        )
        #expect(restaurant.status == 201, "\(restaurant.text)")
        let restaurantID = try #require(restaurant.json["id"] as? String)

        // Ben likes a photo through the typed API: the event the data API's like must match.
        #expect(try await stack.call(.PUT, "/v1/likes/unsplash:mate-aqua-01", token: ben.token).status == 201)

        let script = try #require(Bundle.module.url(forResource: "supabase_data_flow", withExtension: "py", subdirectory: "Fixtures"))
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", script.path, stack.gateway.baseURL, "anon-key", "correct horse 1", ana.email, ben.email, owner.email, restaurantID,
            ]
        ).runToCompletion()
        #expect(output.contains("all steps passed"), "\(output)")

        // Ana's likes written through /rest/v1 are her likes in the typed API…
        let mine = try #require(try await stack.call(.GET, "/v1/likes", token: ana.token).json["items"] as? [[String: Any]])
        #expect(Set(mine.compactMap { $0["photoKey"] as? String }) == ["unsplash:mate-aqua-01", "unsplash:mate-dune-03"])
        // …and each published social.photo.liked.v1 as the typed API's like did.
        try await stack.database.waitUntilOutboxIsPublished(schema: "social")
        let typed = try await TestKafka.shared.events(on: "social.activity", key: ben.id).filter { $0.type == "social.photo.liked.v1" }
        let published = try await TestKafka.shared.events(on: "social.activity", key: ana.id)
        let liked = published.filter { $0.type == "social.photo.liked.v1" }
        #expect(typed.count == 1)
        #expect(liked.count == 3, "A, B and C, once each: \(published.map(\.type))")
        #expect(published.filter { $0.type == "social.photo.unliked.v1" }.count == 1, "B, deleted")
        for event in liked {
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(event.data)) as? [String: Any])
            let typedFields = try #require(try JSONSerialization.jsonObject(with: Data(typed[0].data)) as? [String: Any])
            #expect(Set(fields.keys) == Set(typedFields.keys) && fields["userId"] as? String == ana.id && event.source == typed[0].source)
        }
    }
}
