import ServiceKit
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// Waits for the first SIGINT, SIGTERM or SIGHUP (Ctrl-C, `kill`, a closed terminal).
func waitForStopSignal() async -> UnixSignal? {
    let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
    for await signal in signals {
        return signal
    }
    return nil
}

/// Waits for the first stop signal or, with a `parent`, until that process is no longer ours
/// (`--exit-with-parent`), whichever comes first.
func waitForStop(exitingWithParent parent: pid_t?) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { _ = await waitForStopSignal() }
        if let parent {
            group.addTask { await ParentProcessWatch(parent: parent).run() }
        }
        await group.next()
        group.cancelAll()
    }
}
