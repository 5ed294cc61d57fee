import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Ends when the process that started us is gone, so that a service run by `splash up` does not
/// outlive a `splash` that was killed outright (SIGKILL leaves it no chance to stop its children).
///
/// `splash up` sets `SPLASH_PARENT_PID`; `ServiceMain` then runs this watch in the service group
/// with "gracefully shut down the group" as its termination behaviour. Outside `splash up`
/// (containers, tests) the variable is unset and nothing watches.
package struct ParentProcessWatch: Service {
    package let parent: pid_t
    package let interval: Duration

    package init(parent: pid_t, interval: Duration = .seconds(1)) {
        self.parent = parent
        self.interval = interval
    }

    /// Whether `parent` is still our parent (a dead parent's children are adopted by another).
    package var parentIsAlive: Bool { getppid() == parent }

    /// Returns when the parent is gone, or when the group shuts down for another reason.
    package func run() async {
        // The only error here is the cancellation that graceful shutdown brings: a normal end.
        try? await cancelWhenGracefulShutdown { [self] in
            while parentIsAlive {
                try await Task.sleep(for: interval)
            }
        }
    }
}
