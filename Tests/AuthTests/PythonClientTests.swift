import Foundation
import Testing
import TestSupport

/// supabase-py, the official client, pointed at auth with only its URL changed: sign up, sign in,
/// get the user, update metadata, refresh, sign out. `make test` installs it.
@Suite("The official supabase Python client works unchanged")
struct PythonClientTests {
    @Test func signUpSignInGetUpdateRefreshAndSignOut() async throws {
        let script = try #require(Bundle.module.url(forResource: "supabase_client_flow", withExtension: "py", subdirectory: "Fixtures"))
        try await AuthHarness.with { auth in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            // An anon key as the apps have one: a JWT auth ignores on sign-up and sign-in.
            let anonKey = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiJ9.ZmFrZS1zaWduYXR1cmU"
            process.arguments = ["python3", script.path, auth.app.baseURL, anonKey]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let text = await Task.detached {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return String(decoding: data, as: UTF8.self)
            }.value
            #expect(process.terminationStatus == 0, "\(text)")
            #expect(text.contains("all steps passed"), "\(text)")
        }
    }
}
