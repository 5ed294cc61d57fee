import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP port on 127.0.0.1 that was free a moment ago (the system picks it; another process may
/// still take it before it is used, so callers retry on a bind failure).
package func freePort() -> Int {
    let (descriptor, port) = bindWithoutListening(port: 0)
    precondition(descriptor >= 0, "could not bind an ephemeral port: \(errno)")
    close(descriptor)
    return port
}

/// Holds a port that a test has just stopped serving on: bound, so no other test's server is given
/// it, but not listening, so connections to it are refused — a service that is down.
package final class ClosedPort: Sendable {
    private let descriptor: Int32

    /// - Returns: nil when the port could not be bound (someone took it already).
    package init?(_ port: Int) {
        let (descriptor, _) = bindWithoutListening(port: port)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    /// Lets the port go, for the service to serve on it again.
    package func release() { close(descriptor) }
}

/// A TCP socket bound to 127.0.0.1:`port` (0: any free port) and its port; the descriptor is -1
/// when binding failed.
private func bindWithoutListening(port: Int) -> (Int32, Int) {
    let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketDescriptor >= 0 else { return (-1, 0) }
    var reuse: Int32 = 1
    setsockopt(socketDescriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(socketDescriptor, address, length) == 0 && getsockname(socketDescriptor, address, &length) == 0
        }
    }
    guard bound else {
        close(socketDescriptor)
        return (-1, 0)
    }
    return (socketDescriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// Whether process `pid` itself listens on TCP `port` (a socket of its own in LISTEN state, found
/// through /proc), not merely whether something answers there: between `freePort()` and a
/// server's bind another test's server may have taken the port, and would answer in its place.
package func isListening(pid: Int32, port: Int) -> Bool {
    let suffix = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4)
    var inodes = Set<String>()
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl, local_address, rem_address, st, tx:rx, tr:when, retrnsmt, uid, timeout, inode
            guard fields.count > 9, fields[1].hasSuffix(suffix), fields[3] == "0A" else { continue }
            inodes.insert(String(fields[9]))
        }
    }
    guard !inodes.isEmpty, let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return false }
    return descriptors.contains { descriptor in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)") else { return false }
        return target.hasPrefix("socket:[") && inodes.contains(String(target.dropFirst(8).dropLast()))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
