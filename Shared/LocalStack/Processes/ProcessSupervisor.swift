import Foundation
import ServiceKit

/// Runs the children of `splash up`: starts them one after another, each once the previous is
/// ready, keeps them running, and stops them in reverse order within a time budget.
package actor ProcessSupervisor {
    private var children: [SupervisedProcess] = []
    private let nameWidth: Int
    private let output: LogOutput

    /// - Parameters:
    ///   - nameWidth: the width of the name column in prefixed output.
    ///   - output: where the children's prefixed lines go.
    package init(nameWidth: Int, output: LogOutput = .standardOutput) {
        self.nameWidth = nameWidth
        self.output = output
    }

    /// Registers a child. The caller runs the returned child's `run()` in a child task of its own
    /// task group, so supervision stays structured, and waits for it to be ready before adding the
    /// next one.
    package func add(_ specification: SupervisedProcess.Specification) -> SupervisedProcess {
        let output = PrefixedOutput(name: specification.name, colorIndex: children.count, width: nameWidth, output: output)
        let child = SupervisedProcess(specification, output: output)
        children.append(child)
        return child
    }

    /// Stops every child, last started first. Each gets the time left in `budget`, less a second
    /// kept for every child still to stop after it; what has not stopped by then is killed.
    package func stopAll(budget: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + budget
        for (index, child) in children.enumerated().reversed() {
            let reserve = Duration.seconds(index)
            let timeout = max(.milliseconds(500), ContinuousClock.now.duration(to: deadline) - reserve)
            await child.stop(timeout: timeout)
        }
    }
}

/// Polls `isReady` every 100 ms until it returns true, failing after `timeout`.
package func waitUntilReady(_ name: String, timeout: Duration, _ isReady: @Sendable () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await isReady() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw LocalStackError.notReady(name: name, reason: "not ready after \(DurationFormat.format(timeout))")
}
