import Testing

@testable import EditRender

/// Which hosts a worker may fetch a photo from, beyond the allow-list: never an internal address,
/// however it is spelled.
@Suite("Source hosts") struct SourceHostTests {
    @Test(arguments: ["127.0.0.1", "10.1.2.3", "169.254.169.254", "192.168.0.1", "172.20.0.1", "localhost", "::1", "[fd00::1]"])
    func privateAndLoopbackLiteralsAreRefused(_ host: String) async {
        #expect(await HostAddress.refusal(for: host) == .permanent(reason: "\(host) is a private or loopback address."))
    }

    @Test(arguments: ["2130706433", "0x7f.1", "127.1"])
    func namesAndSpellingsThatResolveToLoopbackAreRefused(_ host: String) async {
        guard case .permanent(let reason) = await HostAddress.refusal(for: host) else {
            Issue.record("\(host) was not refused")
            return
        }
        #expect(reason.contains("resolves to a private or loopback address (127.0.0.1)") || reason.contains("(::1)"), "\(reason)")
    }

    @Test func aPublicAddressPasses() async {
        #expect(await HostAddress.refusal(for: "93.184.215.14") == nil)
    }

    @Test func aNameThatDoesNotResolveIsUnavailableNotAllowed() async {
        guard case .unavailable = await HostAddress.refusal(for: "no-such-host.invalid") else {
            Issue.record("an unresolvable host was not reported unavailable")
            return
        }
    }
}
