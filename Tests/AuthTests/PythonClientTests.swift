import Foundation
import LocalStack
import TestSupport
import Testing

/// supabase-py, the official client, pointed at auth with only its URL changed: sign up, sign in,
/// get the user, update metadata, refresh, sign out. `make test` installs it.
@Suite("The official supabase Python client works unchanged")
struct PythonClientTests {
    @Test func signUpSignInGetUpdateRefreshAndSignOut() async throws {
        let script = try #require(Bundle.module.url(forResource: "supabase_client_flow", withExtension: "py", subdirectory: "Fixtures"))
        try await AuthHarness.with { auth in
            // An anon key as the apps have one: a JWT auth ignores on sign-up and sign-in.
            let anonKey = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiJ9.ZmFrZS1zaWduYXR1cmU"
            let text = try await ProcessCommand(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, auth.app.baseURL, anonKey])
                .runToCompletion()
            #expect(text.contains("all steps passed"), "\(text)")
        }
    }

    /// Every mailed flow, both flow types, through a real SMTP server whose mail the script reads.
    @Test func recoveryCodesMagicLinksAndPKCEThroughRealMail() async throws {
        let script = try #require(Bundle.module.url(forResource: "supabase_mail_flows", withExtension: "py", subdirectory: "Fixtures"))
        let smtp = try await SMTPTestServer()
        defer { smtp.stop() }
        try await AuthHarness.with(["SMTP_URL": smtp.url, "SMTP_CA_FILE": smtp.authority.caFile, "AUTH_REDIRECT_URLS": "splashedit://**"]) { auth in
            let anonKey = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiJ9.ZmFrZS1zaWduYXR1cmU"
            let text = try await ProcessCommand(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", script.path, auth.app.baseURL, anonKey, smtp.mailFolder]
            ).runToCompletion()
            #expect(text.contains("all steps passed"), "\(text)")
            // Over STARTTLS, every one, though the server is on loopback.
            #expect(!smtp.received.isEmpty && smtp.received.allSatisfy(\.tls))
        }
    }
}
