import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@Suite("Profile events through the outbox")
struct ProfileEventTests {
    @Test func aUsernameChangeProducesExactlyOneEventWithoutTheEmail() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            let name = "ana_\(UUID().uuidString.prefix(6).lowercased())"
            for _ in 0..<2 {
                let response = try await auth.call(.put, "/user", json: ["data": ["username": name]], bearer: session.accessToken)
                #expect(response.status == 200)
            }
            // Unrelated metadata changes nothing public.
            _ = try await auth.call(.put, "/user", json: ["data": ["theme": "dark"]], bearer: session.accessToken)
            let events = try await auth.publishedEvents(of: session.userID)
            #expect(events.map(\.type) == ["auth.user.registered.v1", "auth.profile.updated.v1"])
            let updated = try #require(events.last)
            let event = try updated.decode(ProfileUpdated.self)
            #expect(event.username == name)
            #expect(event.changed == [.username])
            #expect(event.userId.uuidString.lowercased() == session.userID)
            #expect(!String(decoding: updated.data, as: UTF8.self).contains("@"))
            #expect(updated.subject == session.userID)
        }
    }

    @Test func signUpPublishesTheRegistrationWithTheUsernameAndRole() async throws {
        try await AuthHarness.with { auth in
            let name = "reg_\(UUID().uuidString.prefix(6).lowercased())"
            let session = try await auth.signUp(data: ["username": name])
            let events = try await auth.publishedEvents(of: session.userID)
            #expect(events.count == 1)
            let registered = try #require(events.first).decode(UserRegistered.self)
            #expect(registered.username == name)
            #expect(registered.role == .customer)
            #expect(!String(decoding: try #require(events.first).data, as: UTF8.self).contains("@"))
        }
    }
}
