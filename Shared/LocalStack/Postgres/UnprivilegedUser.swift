import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Postgres will not run as root. When we are root, its programs run as the `postgres` system user
/// (through util-linux `setpriv`) and the files they need are handed to that user.
package struct UnprivilegedUser: Sendable {
    package var name: String
    package var uid: uid_t
    package var gid: gid_t

    /// The user to run Postgres as, or `nil` when we are not root and run it ourselves.
    /// - Throws: `LocalStackError.noUnprivilegedUser` when root and there is no `postgres` user.
    package static func forPostgres() throws -> UnprivilegedUser? {
        guard geteuid() == 0 else { return nil }
        guard let entry = getpwnam("postgres") else { throw LocalStackError.noUnprivilegedUser }
        return UnprivilegedUser(name: "postgres", uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// `command` run as this user.
    package func wrapping(_ command: ProcessCommand) -> ProcessCommand {
        var wrapped = command
        wrapped.executable = URL(fileURLWithPath: "/usr/bin/setpriv")
        wrapped.arguments = ["--reuid=\(uid)", "--regid=\(gid)", "--init-groups", "--", command.executable.path] + command.arguments
        return wrapped
    }

    /// Makes `path` (and, recursively, what is in it) owned by this user.
    package func takeOwnership(of path: URL) throws {
        let manager = FileManager.default
        try manager.setAttributes([.ownerAccountID: uid, .groupOwnerAccountID: gid], ofItemAtPath: path.path)
        if let contents = manager.enumerator(atPath: path.path) {
            for case let relative as String in contents {
                try manager.setAttributes(
                    [.ownerAccountID: uid, .groupOwnerAccountID: gid],
                    ofItemAtPath: path.appendingPathComponent(relative).path
                )
            }
        }
    }
}
