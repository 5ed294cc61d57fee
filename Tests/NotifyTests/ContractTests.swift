import Foundation
import TestSupport
import Testing

@testable import Notify

/// notify's answers against `Services/Notify/openapi.yaml`. `make contract SERVICE=notify` runs
/// this suite alone.
@Suite("notify contract")
struct ContractTests {
    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let report = try await Schemathesis(
                service: "Notify",
                baseURL: notify.app.baseURL,
                headers: [("Authorization", "Bearer \(try notify.token(for: UUID()))")]
            ).run()
            #expect(report.passed, "\(report)")
        }
    }
}
