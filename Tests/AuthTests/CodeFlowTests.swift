import AsyncHTTPClient
import Crypto
import Foundation
import Identity
import TestSupport
import Testing

@testable import Auth

/// The mailed flows, read from the catcher as a person reads a mail: recovery, a code to sign in,
/// the link in its implicit and PKCE forms, the guards against guessing and spraying, and /settings.
@Suite("Codes and links by mail")
struct CodeFlowTests {
    /// Links are followed by hand: a 303's target is what is checked.
    static let browser = HTTPClient.notFollowingRedirects

    static let settings = ["AUTH_SITE_URL": "http://localhost:3000", "AUTH_REDIRECT_URLS": "splashedit://**,https://*.splash.example/welcome"]

    func follow(_ link: String) async throws -> (status: Int, location: String) {
        let response = try await Self.browser.execute(HTTPClientRequest(url: link), timeout: .seconds(10))
        return (Int(response.status.code), response.headers.first(name: "location") ?? "")
    }

    /// `link` pointed at the test's auth instead of the public address it was written for.
    func local(_ link: String, _ auth: AuthHarness) -> String {
        link.replacingOccurrences(of: "http://localhost:8080", with: auth.app.baseURL)
    }

    @Test func aForgottenPasswordIsRecoveredWithTheMailedCodeOnceAndTheSameAnswerComesForAnUnknownAddress() async throws {
        try await AuthHarness.with(Self.settings) { auth in
            let person = try await auth.signUp()
            let recover = try await auth.call(.post, "/recover", json: ["email": person.email.uppercased()])
            #expect(recover.status == 200 && recover.text == "{}", "\(recover.text)")
            let mail = try #require(try await auth.mail(to: person.email).first)
            #expect(mail.subject == "Reset your Splash password")
            let code = try #require(mail.code, "\(mail.text)")
            #expect(!(mail.link ?? "").contains(code))
            #expect(mail.html.contains(code) && mail.html.contains("href=\"http://localhost:8080/auth/v1/verify?token="))

            let verified = try await auth.call(.post, "/verify", json: ["type": "recovery", "email": person.email, "token": code])
            let session = try Session(verified, expecting: 200)
            #expect(session.userID == person.userID)
            let changed = try await auth.call(.put, "/user", json: ["password": "a new horse 2"], bearer: session.accessToken)
            #expect(changed.status == 200)
            #expect(try await auth.signIn(person.email, password: "a new horse 2").status == 200)
            // Spent.
            let again = try await auth.call(.post, "/verify", json: ["type": "recovery", "email": person.email, "token": code])
            #expect(again.status == 403 && again.headers["x-sb-error-code"] == "otp_expired")

            // One mail of a kind a minute, for an address with an account or without: the same answers.
            let unknown = AuthHarness.uniqueEmail("nobody")
            for address in [person.email, unknown] {
                let first = try await auth.call(.post, "/recover", json: ["email": address])
                #expect(first.status == (address == unknown ? 200 : 429), "\(address)")
                let second = try await auth.call(.post, "/recover", json: ["email": address])
                #expect(second.status == 429 && second.headers["x-sb-error-code"] == "over_email_send_rate_limit")
                #expect(second.headers["retry-after"] == "60")
            }
            #expect(try await auth.database.count("auth.mail_outbox", where: "to_address = '\(unknown)'") == 0)
        }
    }

    @Test func aCodeSignsUpAnUnknownAddressConfirmedAndFiveWrongCodesLockTheAddress() async throws {
        try await AuthHarness.with(Self.settings) { auth in
            let address = AuthHarness.uniqueEmail("coder")
            let refused = try await auth.call(.post, "/otp", json: ["email": address, "create_user": false])
            #expect(refused.status == 422 && refused.headers["x-sb-error-code"] == "otp_disabled")
            #expect(try await auth.call(.post, "/otp", json: ["email": address, "data": ["username": "coder"]]).status == 200)
            let mail = try #require(try await auth.mail(to: address).first)
            #expect(mail.subject == "Confirm your Splash account")
            let code = try #require(mail.code)
            let session = try Session(
                try await auth.call(.post, "/verify", json: ["type": "email", "email": address, "token": code]),
                expecting: 200
            )
            let user = try await auth.call(.get, "/user", bearer: session.accessToken).json()
            #expect(user["email_confirmed_at"] is String)
            #expect((user["user_metadata"] as? [String: Any])?["username"] as? String == "coder")

            // A confirmed address gets a magic link next time; five wrong guesses lock its codes,
            // the right one included, and the lock looks like any wrong code.
            let other = try await auth.signUp()
            #expect(try await auth.call(.post, "/otp", json: ["email": other.email]).status == 200)
            let right = try #require(try await auth.mail(to: other.email).first?.code)
            let wrong = right == "000000" ? "111111" : "000000"
            for _ in 0..<5 {
                let guess = try await auth.call(.post, "/verify", json: ["type": "magiclink", "email": other.email, "token": wrong])
                #expect(guess.status == 403 && guess.headers["x-sb-error-code"] == "otp_expired")
            }
            let locked = try await auth.call(.post, "/verify", json: ["type": "magiclink", "email": other.email, "token": right])
            #expect(locked.status == 403 && locked.headers["x-sb-error-code"] == "otp_expired")
            #expect(try await auth.call(.post, "/verify", json: ["type": "magic", "email": other.email, "token": right]).status == 400)
        }
    }

    @Test func aLinkSignsInByTheImplicitFlowOnceAndNeverRedirectsOutsideTheList() async throws {
        try await AuthHarness.with(Self.settings) { auth in
            let person = try await auth.signUp()
            let asked = try await auth.call(.post, "/otp?redirect_to=splashedit://signed-in", json: ["email": person.email])
            #expect(asked.status == 200)
            let link = try #require(try await auth.mail(to: person.email).first?.link)
            #expect(link.hasPrefix("http://localhost:8080/auth/v1/verify?token=") && link.contains("type=magiclink"))
            let followed = try await follow(local(link, auth))
            #expect(followed.status == 303)
            #expect(followed.location.hasPrefix("splashedit://signed-in#access_token="), "\(followed.location)")
            let fragment = URLComponents(string: "x:?" + (followed.location.split(separator: "#").last.map(String.init) ?? ""))?.queryItems ?? []
            let access = try #require(fragment.first { $0.name == "access_token" }?.value)
            #expect(fragment.first { $0.name == "type" }?.value == "magiclink")
            #expect(try await auth.call(.get, "/user", bearer: access).status == 200)
            // The same link again: GoTrue's error, in the fragment of the redirect.
            let spent = try await follow(local(link, auth))
            #expect(spent.location.hasPrefix("splashedit://signed-in#error=access_denied&error_code=otp_expired"), "\(spent.location)")

            // A redirect outside the list falls back to the site URL; a glob lets one in.
            let forged = try await follow(auth.app.baseURL + "/auth/v1/verify?token=nope&type=magiclink&redirect_to=https://evil.example/")
            #expect(forged.location.hasPrefix("http://localhost:3000#error=access_denied"), "\(forged.location)")
            let policy = RedirectPolicy(siteURL: "http://localhost:3000", allowed: ["splashedit://**", "https://*.splash.example/welcome"])
            #expect(policy.resolve("https://eu.splash.example/welcome") == "https://eu.splash.example/welcome")
            #expect(policy.resolve("https://a.b.splash.example/welcome") == "http://localhost:3000")
            #expect(policy.resolve("https://splash.example.evil.example/welcome") == "http://localhost:3000")
            #expect(policy.resolve("https://evil?x=.splash.example/welcome") == "http://localhost:3000")
            #expect(policy.resolve("https://evil.example#.splash.example/welcome") == "http://localhost:3000")
            #expect(policy.resolve("https://me@evil.example/x.splash.example/welcome") == "http://localhost:3000")
            #expect(policy.resolve("http://localhost:3000/reset?x=1") == "http://localhost:3000/reset?x=1")
        }
    }

    @Test func aPKCELinkAnswersACodeThatOnlyItsVerifierExchangesOnce() async throws {
        try await AuthHarness.with(Self.settings) { auth in
            let person = try await auth.signUp()
            let verifier = OpaqueToken.random() + OpaqueToken.random()
            let challenge = Base64URL.encode(SHA256.hash(data: Data(verifier.utf8)))
            let asked = try await auth.call(
                .post,
                "/recover?redirect_to=splashedit://reset",
                json: ["email": person.email, "code_challenge": challenge, "code_challenge_method": "s256"]
            )
            #expect(asked.status == 200)
            let link = try #require(try await auth.mail(to: person.email).first?.link)
            let followed = try await follow(local(link, auth))
            #expect(followed.status == 303 && followed.location.hasPrefix("splashedit://reset?code="), "\(followed.location)")
            let code = try #require(URLComponents(string: followed.location)?.queryItems?.first { $0.name == "code" }?.value)

            let wrong = try await auth.call(.post, "/token?grant_type=pkce", json: ["auth_code": code, "code_verifier": verifier + "x"])
            #expect(wrong.status == 400 && wrong.headers["x-sb-error-code"] == "bad_code_verifier")
            // A code is good for one try.
            let late = try await auth.call(.post, "/token?grant_type=pkce", json: ["auth_code": code, "code_verifier": verifier])
            #expect(late.status == 404 && late.headers["x-sb-error-code"] == "flow_state_not_found")

            // Another flow, exchanged right.
            let other = try await auth.signUp()
            let plain = OpaqueToken.random() + "abcdefgh"
            _ = try await auth.call(.post, "/otp", json: ["email": other.email, "code_challenge": plain, "code_challenge_method": "plain"])
            let otherLink = try #require(try await auth.mail(to: other.email).first?.link)
            let otherCode = try #require(
                URLComponents(string: try await follow(local(otherLink, auth)).location)?.queryItems?.first { $0.name == "code" }?.value
            )
            let session = try Session(
                try await auth.call(.post, "/token?grant_type=pkce", json: ["auth_code": otherCode, "code_verifier": plain]),
                expecting: 200
            )
            #expect(session.userID == other.userID)
            let bad = try await auth.call(.post, "/otp", json: ["email": other.email, "code_challenge": "short", "code_challenge_method": "s256"])
            #expect(bad.status == 400 && bad.headers["x-sb-error-code"] == "validation_failed")
        }
    }

    @Test func withConfirmationOnSignUpMailsACodeAndAPasswordWaitsForIt() async throws {
        var settings = Self.settings
        settings["AUTH_EMAIL_CONFIRM"] = "true"
        try await AuthHarness.with(settings) { auth in
            let address = AuthHarness.uniqueEmail("confirm")
            let signedUp = try await auth.call(.post, "/signup", json: ["email": address, "password": "correct horse 1"])
            #expect(signedUp.status == 200)
            let user = try signedUp.json()
            #expect(user["access_token"] == nil && user["email"] as? String == address)
            #expect(user["confirmation_sent_at"] is String && user["email_confirmed_at"] == nil)
            let early = try await auth.signIn(address)
            #expect(early.status == 400 && early.headers["x-sb-error-code"] == "email_not_confirmed")
            let wrong = try await auth.signIn(address, password: "not the password")
            #expect(wrong.headers["x-sb-error-code"] == "invalid_credentials")

            let code = try #require(try await auth.mail(to: address).first?.code)
            let confirmed = try Session(try await auth.call(.post, "/verify", json: ["type": "signup", "email": address, "token": code]))
            #expect(try await auth.signIn(address).status == 200)
            let events = try await auth.publishedEvents(of: confirmed.userID).map(\.type)
            #expect(events == ["auth.user.registered.v1", "auth.user.email-confirmed.v1"])
            #expect(try await auth.call(.get, "/settings").json()["mailer_autoconfirm"] as? Bool == false)
        }
    }

    @Test func aNewAddressIsAppliedOnlyOnceBothAddressesConfirmIt() async throws {
        try await AuthHarness.with(Self.settings) { auth in
            let person = try await auth.signUp()
            let newAddress = AuthHarness.uniqueEmail("moved")
            let asked = try await auth.call(.put, "/user", json: ["email": newAddress.uppercased()], bearer: person.accessToken)
            #expect(asked.status == 200, "\(asked.text)")
            let user = try asked.json()
            #expect(user["email"] as? String == person.email && user["new_email"] as? String == newAddress)
            #expect(user["email_change_sent_at"] is String)
            // Not applied yet: the old address still signs in.
            #expect(try await auth.signIn(person.email).status == 200)
            let toNew = try #require(try await auth.mail(to: newAddress).first)
            let toCurrent = try #require(try await auth.mail(to: person.email).first)
            #expect(toNew.subject == "Confirm your new Splash address" && toNew.text.contains(person.email))
            #expect(toCurrent.subject == "Confirm the change of your Splash address" && toCurrent.text.contains(newAddress))
            #expect(try #require(toNew.link).contains("type=email_change"))

            let first = try await auth.call(
                .post,
                "/verify",
                json: ["type": "email_change", "email": newAddress, "token": try #require(toNew.code)]
            )
            let message = try first.json()["msg"] as? String
            #expect(first.status == 200 && message?.hasPrefix("Confirmation link accepted") == true, "\(first.text)")
            #expect(try await auth.signIn(newAddress).status == 400)
            let second = try await auth.call(
                .post,
                "/verify",
                json: ["type": "email_change", "email": person.email, "token": try #require(toCurrent.code)]
            )
            let session = try Session(second)
            #expect(session.email == newAddress)
            #expect(try await auth.signIn(newAddress).status == 200)
            #expect(try await auth.signIn(person.email).status == 400)
            let events = try await auth.publishedEvents(of: person.userID).map(\.type)
            #expect(events.last == "auth.user.email-changed.v1")
        }
    }

    @Test func withoutTheSecureChangeTheNewAddressAloneConfirms() async throws {
        var settings = Self.settings
        settings["AUTH_SECURE_EMAIL_CHANGE"] = "false"
        try await AuthHarness.with(settings) { auth in
            let person = try await auth.signUp()
            let newAddress = AuthHarness.uniqueEmail("moved")
            #expect(try await auth.call(.put, "/user", json: ["email": newAddress], bearer: person.accessToken).status == 200)
            let code = try #require(try await auth.mail(to: newAddress).first?.code)
            // Another request for the same change within the minute: the mail limit.
            let again = try await auth.call(.post, "/resend", json: ["type": "email_change", "email": newAddress])
            #expect(again.status == 429)
            let session = try Session(try await auth.call(.post, "/verify", json: ["type": "email_change", "email": newAddress, "token": code]))
            #expect(session.email == newAddress)
            #expect(try await auth.database.count("auth.mail_outbox", where: "to_address = '\(person.email)'") == 0)
        }
    }

    @Test func anAdminInvitesAndTheMailedCodeSignsTheInviteeIn() async throws {
        try await AuthHarness.with(Self.settings) { auth in
            let admin = try await auth.signUp()
            try await auth.makeAdmin(admin.userID)
            let someone = try await auth.signUp()
            let invitee = AuthHarness.uniqueEmail("invited")
            let refused = try await auth.call(.post, "/invite", json: ["email": invitee], bearer: someone.accessToken)
            #expect(refused.status == 403 && refused.headers["x-sb-error-code"] == "not_admin")
            let invited = try await auth.call(
                .post,
                "/invite",
                json: ["email": invitee, "data": ["username": "newcomer"]],
                bearer: admin.accessToken
            )
            #expect(invited.status == 200, "\(invited.text)")
            #expect(try invited.json()["email_confirmed_at"] == nil)
            let again = try await auth.call(.post, "/invite", json: ["email": invitee], bearer: admin.accessToken)
            #expect(again.status == 422 && again.headers["x-sb-error-code"] == "email_exists")
            let mail = try #require(try await auth.mail(to: invitee).first)
            #expect(mail.subject == "You have been invited to Splash")
            let session = try Session(
                try await auth.call(.post, "/verify", json: ["type": "invite", "email": invitee, "token": try #require(mail.code)])
            )
            let user = try await auth.call(.get, "/user", bearer: session.accessToken).json()
            #expect(user["email_confirmed_at"] is String)
            #expect((user["user_metadata"] as? [String: Any])?["username"] as? String == "newcomer")
        }
    }

    @Test func theCatchersMailIsForAdminsOnly() async throws {
        try await AuthHarness.with { auth in
            let person = try await auth.signUp()
            #expect(try await auth.call(.post, "/recover", json: ["email": person.email]).status == 200)
            _ = try await auth.mail(to: person.email)
            let refused = try await auth.call(.get, "/admin/mail?to=\(person.email)", bearer: person.accessToken)
            #expect(refused.status == 403 && refused.headers["x-sb-error-code"] == "not_admin")
            let admin = try await auth.signUp()
            try await auth.makeAdmin(admin.userID)
            let listed = try await auth.call(.get, "/admin/mail?to=\(person.email.uppercased())", bearer: admin.accessToken).json()
            let items = try #require(listed["items"] as? [[String: Any]])
            #expect(items.count == 1)
            #expect(items.first?["subject"] as? String == "Reset your Splash password")
            #expect((items.first?["createdAt"] as? String)?.hasSuffix("Z") == true)
            #expect((items.first?["text"] as? String)?.contains("/auth/v1/verify?token=") == true)
        }
    }

    @Test func resendReplacesTheSignUpCodeAndSettingsSayWhatIsOn() async throws {
        let templates = FileManager.default.temporaryDirectory.appendingPathComponent("auth-templates-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: templates, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: templates) }
        try "Welcome aboard, {{email}}".write(to: templates.appendingPathComponent("signup.subject.mustache"), atomically: true, encoding: .utf8)
        var settings = Self.settings
        settings["AUTH_MAIL_TEMPLATES_DIR"] = templates.path
        try await AuthHarness.with(settings) { auth in
            let address = AuthHarness.uniqueEmail("late")
            #expect(try await auth.call(.post, "/otp", json: ["email": address]).status == 200)
            let first = try #require(try await auth.mail(to: address).first)
            #expect(first.subject == "Welcome aboard, \(address)")
            try await auth.withDatabase { client in
                try await client.query("UPDATE auth.mail_sends SET sent_at = sent_at - interval '2 minutes'")
            }
            #expect(try await auth.call(.post, "/resend", json: ["type": "signup", "email": address]).status == 200)
            let second = try #require(try await auth.mail(to: address, count: 2).first)
            let old = try await auth.call(.post, "/verify", json: ["type": "signup", "email": address, "token": try #require(first.code)])
            #expect(old.status == 403 || first.code == second.code)
            #expect(
                try await auth.call(.post, "/verify", json: ["type": "signup", "email": address, "token": try #require(second.code)]).status == 200
            )

            let shown = try await auth.call(.get, "/settings").json()
            #expect((shown["external"] as? [String: Any])?["email"] as? Bool == true)
            #expect(shown["mailer_autoconfirm"] as? Bool == true && shown["disable_signup"] as? Bool == false)
        }
    }
}
