import Foundation
import Testing
import TestSupport

/// What the gateway answers itself against `Services/Gateway/openapi.yaml`.
/// `make contract SERVICE=gateway` runs this suite alone.
@Suite("gateway contract")
struct ContractTests {
    /// Every operation without a token, then the event stream's refusals with one: a stream the
    /// gateway accepts does not end, so only requests the document says are invalid are sent
    /// with a token (RealtimeTests test the stream).
    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await GatewayHarness.with { gateway in
            // As a deployment would: traffic once /readyz says so (its 503 before is a server error to schemathesis).
            try await eventually("the gateway ready") { try await gateway.get("/readyz").status == 200 }
            let anonymous = try await Schemathesis(service: "Gateway", baseURL: gateway.app.baseURL, stateful: false).run()
            #expect(anonymous.passed, "\(anonymous)")
            let refusals = try await Schemathesis(service: "Gateway", baseURL: gateway.app.baseURL, headers: [("Authorization", "Bearer \(try gateway.token())")],
                                                  includePaths: ["^/v1/events$"], stateful: false, mode: "negative").run()
            #expect(refusals.passed, "\(refusals)")
        }
    }
}
