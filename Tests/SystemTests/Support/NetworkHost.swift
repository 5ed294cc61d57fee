import Foundation
import LocalStack

#if canImport(Glibc)
import Glibc
#endif

/// A second "host" for a test: a network namespace of its own (`ip netns`), joined to this one by
/// a veth pair on a private /30 that leads nowhere else, so the test can cut the link (a
/// partition: packets dropped, no reset, as when a switch fails) and mend it.
final class NetworkHost: Sendable {
    /// The namespace's name (`ip netns exec <name> …` runs a program on the host).
    let name: String
    /// The host's address, reachable from this namespace while the link is up.
    let address: String
    /// This namespace's end of the link, and the host's.
    private let link: String
    private let peer: String

    /// Whether this machine lets a test make network namespaces (root, `ip` from iproute2).
    static let isAvailable: Bool = {
        guard getuid() == 0, let ip = ipPath else { return false }
        let probe = "splash-probe-\(getpid())"
        guard run(ip, ["netns", "add", probe]) else { return false }
        _ = run(ip, ["netns", "del", probe])
        return true
    }()

    static let ipPath = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Makes the namespace and its link; `subnet` (0…255) picks `10.231.<subnet>.0/30`.
    init(subnet: Int) throws {
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        name = "splash-\(getpid())-\(tag)"
        link = "sp\(tag)a"
        peer = "sp\(tag)b"
        address = "10.231.\(subnet).2"
        let ip = try Self.ip()
        let steps: [[String]] = [
            ["netns", "add", name],
            ["link", "add", link, "type", "veth", "peer", "name", peer],
            ["link", "set", peer, "netns", name],
            ["addr", "add", "10.231.\(subnet).1/30", "dev", link],
            ["link", "set", link, "up"],
            ["netns", "exec", name, ip, "addr", "add", "\(address)/30", "dev", peer],
            ["netns", "exec", name, ip, "link", "set", peer, "up"],
            ["netns", "exec", name, ip, "link", "set", "lo", "up"],
        ]
        for step in steps where !Self.run(ip, step) {
            _ = Self.run(ip, ["netns", "del", name])
            _ = Self.run(ip, ["link", "del", link])
            throw LocalStackError.notReady(name: "network host", reason: "ip \(step.joined(separator: " ")) failed")
        }
    }

    /// `command` run on this host.
    func command(_ command: ProcessCommand) throws -> ProcessCommand {
        ProcessCommand(
            URL(fileURLWithPath: try Self.ip()),
            ["netns", "exec", name, command.executable.path] + command.arguments,
            environment: command.environment
        )
    }

    /// Cuts the link at the host's end: from now on packets either way are dropped silently
    /// (this end has lost its carrier and keeps its route), as when a switch between two hosts
    /// fails; open connections hang, new ones get no answer.
    func partition() throws { try set(up: false) }

    /// Mends the link.
    func heal() throws { try set(up: true) }

    /// Removes the namespace (and with it the link).
    func remove() {
        guard let ip = Self.ipPath else { return }
        _ = Self.run(ip, ["netns", "del", name])
        _ = Self.run(ip, ["link", "del", link])
    }

    private func set(up: Bool) throws {
        let ip = try Self.ip()
        guard Self.run(ip, ["netns", "exec", name, ip, "link", "set", peer, up ? "up" : "down"]) else {
            throw LocalStackError.notReady(name: "network host", reason: "could not set \(peer) \(up ? "up" : "down")")
        }
    }

    private static func ip() throws -> String {
        guard let ipPath else { throw LocalStackError.notReady(name: "network host", reason: "no ip command (iproute2)") }
        return ipPath
    }

    @discardableResult
    private static func run(_ executable: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus == 0
        } catch {
            return false
        }
    }
}
