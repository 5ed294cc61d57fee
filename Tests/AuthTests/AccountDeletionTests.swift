import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@testable import Auth

/// Deleting an account (accounts.md, "Deleting an account"): by its owner with the password or a
/// mailed nonce, by an admin or a service; everything of it gone from auth in one transaction, the
/// address free again, `auth.user.deleted.v1` published; and an owner of restaurants refused.
@Suite("Deleting an account")
struct AccountDeletionTests {
    static let serviceToken = String(repeating: "d", count: 40)

    /// The rows auth keeps of `userID`, table by table, that are not zero.
    func leftovers(of userID: String, _ auth: AuthHarness) async throws -> [String: Int] {
        var left: [String: Int] = [:]
        for (table, column) in [
            ("users", "id"), ("identities", "user_id"), ("sessions", "user_id"), ("refresh_tokens", "user_id"),
            ("one_time_tokens", "user_id"), ("flow_states", "user_id"),
        ] {
            let count = try await auth.database.count("auth.\(table)", where: "\(column) = '\(userID)'")
            if count > 0 { left[table] = count }
        }
        return left
    }

    @Test func theOwnerDeletesWithThePasswordAndNothingOfTheAccountStaysButTheEvent() async throws {
        try await AuthHarness.with { auth in
            let person = try await auth.signUp()
            let bystander = try await auth.signUp()
            // A second session and a pending recovery code: they go too.
            let second = try Session(try await auth.signIn(person.email), expecting: 200)
            #expect(try await auth.call(.post, "/recover", json: ["email": person.email]).status == 200)

            let bare = try await auth.call(.delete, "/user", json: [:] as [String: String], bearer: person.accessToken)
            #expect(bare.status == 400 && bare.headers["x-sb-error-code"] == "reauthentication_needed", "\(bare.text)")
            let wrong = try await auth.call(.delete, "/user", json: ["password": "not it at all"], bearer: person.accessToken)
            #expect(wrong.status == 400 && wrong.headers["x-sb-error-code"] == "invalid_credentials")
            let anonymous = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"])
            #expect(anonymous.status == 401)
            #expect(try await leftovers(of: person.userID, auth)["users"] == 1)

            let deleted = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: person.accessToken)
            #expect(deleted.status == 204, "\(deleted.text)")
            #expect(try await leftovers(of: person.userID, auth) == [:])
            #expect(try await auth.database.count("auth.mail_outbox", where: "lower(to_address) = '\(person.email)'") == 0)
            #expect(try await auth.database.count("auth.mail_sends", where: "address = '\(person.email)'") == 0)

            // Neither session's tokens work at auth; deleting again is the same refusal.
            for session in [person, second] {
                #expect(try await auth.call(.get, "/user", bearer: session.accessToken).status == 403)
                #expect(try await auth.refresh(session.refreshToken).status == 400)
            }
            let again = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: person.accessToken)
            #expect(again.status == 403 && again.headers["x-sb-error-code"] == "session_not_found")
            // The bystander is untouched; the address signs up again at once, as a new account.
            #expect(try await auth.call(.get, "/user", bearer: bystander.accessToken).status == 200)
            let reborn = try await auth.signUp(person.email)
            #expect(reborn.userID != person.userID)

            let events = try await auth.publishedEvents(of: person.userID)
            #expect(events.map(\.type) == ["auth.user.registered.v1", "auth.user.deleted.v1"])
            let payload = try #require(events.last.map { String(decoding: $0.data, as: UTF8.self) })
            let event = try EventJSON.decoder.decode(UserDeleted.self, from: Data(payload.utf8))
            #expect(event.userId.uuidString.lowercased() == person.userID)
            #expect(!payload.contains("@"), "no address in \(payload)")
        }
    }

    @Test func anAccountWithoutAPasswordDeletesWithTheMailedNonceOnlyOnce() async throws {
        try await AuthHarness.with { auth in
            let address = AuthHarness.uniqueEmail("nonce")
            #expect(try await auth.call(.post, "/otp", json: ["email": address]).status == 200)
            let code = try #require(try await auth.mail(to: address).first?.code)
            let person = try Session(try await auth.call(.post, "/verify", json: ["type": "email", "email": address, "token": code]), expecting: 200)
            let other = try await auth.signUp()

            #expect(try await auth.call(.get, "/reauthenticate").status == 401)
            let asked = try await auth.call(.get, "/reauthenticate", bearer: person.accessToken)
            #expect(asked.status == 200 && asked.text == "{}", "\(asked.text)")
            let mails = try await auth.mail(to: address, count: 2)
            #expect(mails.first?.subject == "Confirm it is you")
            let nonce = try #require(mails.first?.code)
            // Within the minute: GoTrue's rate limit.
            #expect(try await auth.call(.get, "/reauthenticate", bearer: person.accessToken).status == 429)

            // A nonce is not a sign-in code, and works for its own account only.
            let asCode = try await auth.call(.post, "/verify", json: ["type": "email", "email": address, "token": nonce])
            #expect(asCode.status == 403)
            let othersNonce = try await auth.call(.delete, "/user", json: ["nonce": nonce], bearer: other.accessToken)
            #expect(othersNonce.status == 400 && othersNonce.headers["x-sb-error-code"] == "reauthentication_not_valid")
            let wrongNonce = try await auth.call(
                .delete,
                "/user",
                json: ["nonce": nonce == "000000" ? "111111" : "000000"],
                bearer: person.accessToken
            )
            #expect(wrongNonce.status == 400 && wrongNonce.headers["x-sb-error-code"] == "reauthentication_not_valid")
            // No password to give: any password is wrong.
            let password = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: person.accessToken)
            #expect(password.status == 400 && password.headers["x-sb-error-code"] == "invalid_credentials")
            #expect(try await auth.call(.get, "/user", bearer: other.accessToken).status == 200)

            let deleted = try await auth.call(.delete, "/user", json: ["nonce": nonce], bearer: person.accessToken)
            #expect(deleted.status == 204, "\(deleted.text)")
            #expect(try await leftovers(of: person.userID, auth) == [:])
            #expect(try await auth.database.count("auth.code_failures", where: "address = '\(address)'") == 0)
        }
    }

    @Test func anAdminOrAServiceDeletesAnyAccountOnceAndOthersCannot() async throws {
        try await AuthHarness.with(["AUTH_SERVICE_TOKEN": Self.serviceToken]) { auth in
            let admin = try await auth.signUp()
            try await auth.makeAdmin(admin.userID)
            let target = try await auth.signUp()
            let another = try await auth.signUp()

            let refused = try await auth.call(.delete, "/admin/users/\(another.userID)", bearer: target.accessToken)
            #expect(refused.status == 403 && refused.headers["x-sb-error-code"] == "not_admin")
            let forged = try await auth.call(
                .delete,
                "/admin/users/\(another.userID)",
                headers: [("X-Splash-Service-Token", "x" + Self.serviceToken)]
            )
            #expect(forged.status == 403)

            let deleted = try await auth.call(.delete, "/admin/users/\(target.userID.uppercased())", bearer: admin.accessToken)
            #expect(deleted.status == 200, "\(deleted.text)")
            let user = try deleted.json()
            #expect(user["id"] as? String == target.userID && user["email"] as? String == target.email)
            #expect(try await leftovers(of: target.userID, auth) == [:])
            let twice = try await auth.call(.delete, "/admin/users/\(target.userID)", bearer: admin.accessToken)
            #expect(twice.status == 404 && twice.headers["x-sb-error-code"] == "user_not_found")
            #expect(try await auth.call(.delete, "/admin/users/not-a-uuid", bearer: admin.accessToken).status == 404)

            let byService = try await auth.call(.delete, "/admin/users/\(another.userID)", headers: [("X-Splash-Service-Token", Self.serviceToken)])
            #expect(byService.status == 200)
            #expect(try await auth.call(.get, "/user", bearer: admin.accessToken).status == 200)
        }
    }

    @Test func anOwnerOfRestaurantsIsRefusedUntilTheyAreHandedOver() async throws {
        try await AuthHarness.with(["AUTH_SERVICE_TOKEN": Self.serviceToken]) { auth in
            let owner = try await auth.signUp()
            let heir = try await auth.signUp()
            let ownerID = try #require(UUID(uuidString: owner.userID))
            let restaurants = [UUID(), UUID()]
            let opened = restaurants.map { id in
                RestaurantChanged(
                    restaurantId: id,
                    ownerId: ownerID,
                    change: .created,
                    name: "Kiosk",
                    cuisine: nil,
                    isOpen: true,
                    version: 1,
                    changedAt: Date()
                )
            }
            try await TestKafka.shared.publish(opened, source: "tracking")
            try await eventually("auth knows both restaurants' owner", timeout: .seconds(60)) {
                try await auth.database.count("auth.restaurant_owners", where: "owner_id = '\(owner.userID)'") == 2
            }

            let own = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: owner.accessToken)
            #expect(own.status == 409 && own.headers["x-sb-error-code"] == "user_owns_restaurants", "\(own.text)")
            #expect(own.text.contains("2 restaurants"))
            let byService = try await auth.call(.delete, "/admin/users/\(owner.userID)", headers: [("X-Splash-Service-Token", Self.serviceToken)])
            #expect(byService.status == 409)
            #expect(try await auth.call(.get, "/user", bearer: owner.accessToken).status == 200)

            // Handed over (a newer version naming the heir); an old version read again changes nothing.
            let heirID = try #require(UUID(uuidString: heir.userID))
            var handedOver = opened.map { $0 }
            for index in handedOver.indices {
                handedOver[index].ownerId = heirID
                handedOver[index].version = 2
                handedOver[index].change = .updated
            }
            try await TestKafka.shared.publish(handedOver + [opened[0]], source: "tracking")
            try await eventually("auth knows the heir owns both", timeout: .seconds(60)) {
                try await auth.database.count("auth.restaurant_owners", where: "owner_id = '\(heir.userID)'") == 2
            }
            let deleted = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: owner.accessToken)
            #expect(deleted.status == 204, "\(deleted.text)")
            let heirs = try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: heir.accessToken)
            #expect(heirs.status == 409)
        }
    }
}
