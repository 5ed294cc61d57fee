import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time a process has used, from Linux's /proc: what the benchmarks divide by the requests
/// served to report a service's cost per request, which does not move with the latency noise of a
/// shared machine.
package enum ProcessCPU {
    /// User plus system time of `pid` and all its threads so far, in seconds; `nil` when the
    /// process is gone.
    package static func seconds(_ pid: pid_t) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, utime 14 and stime 15 (man 5 proc).
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The children of `pid` (for nginx: its master's workers).
    package static func children(of pid: pid_t) -> [pid_t] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return text.split(separator: " ").compactMap { pid_t($0) }
    }
}
