#if canImport(Glibc)
import Glibc
#endif

/// A TCP port on 127.0.0.1 that was free a moment ago (the system picks it; another process may
/// still take it before it is used, so callers retry on a bind failure).
package func freePort() -> Int {
    let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(socketDescriptor >= 0, "socket() failed: \(errno)")
    defer { close(socketDescriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(socketDescriptor, address, length) == 0 && getsockname(socketDescriptor, address, &length) == 0
        }
    }
    precondition(bound, "could not bind an ephemeral port: \(errno)")
    return Int(UInt16(bigEndian: address.sin_port))
}
