import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The processes below a process, read from `/proc`, to stop a whole tree (a wrapper and the
/// server it runs) when a polite signal was not enough.
package enum ProcessTree {
    /// Every descendant of `pid`, children before grandchildren.
    package static func descendants(of pid: pid_t) -> [pid_t] {
        var parents: [pid_t: pid_t] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let child = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let closing = stat.lastIndex(of: ")")
            else { continue }
            // Fields after the command name: state, ppid, …
            let fields = stat[stat.index(after: closing)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) {
                parents[child] = parent
            }
        }
        var result: [pid_t] = []
        var frontier = [pid]
        while let current = frontier.popLast() {
            let children = parents.filter { $0.value == current }.map(\.key)
            result += children
            frontier += children
        }
        return result
    }

    /// Sends SIGKILL to `pid` and everything below it.
    package static func kill(_ pid: pid_t) {
        let below = descendants(of: pid)
        _ = Glibc.kill(pid, SIGKILL)
        for descendant in below { _ = Glibc.kill(descendant, SIGKILL) }
    }
}
