import Foundation
import LocalStack
import TestSupport
import Testing

@Suite("splash up's process supervisor")
struct ProcessSupervisorTests {
    /// How long a child may take to start and print: `make test` runs every suite at once on two
    /// cores, where 5 s once ran out for three children at a time.
    static let patience: Duration = .seconds(20)

    private func shell(_ name: String, _ script: String) -> SupervisedProcess.Specification {
        .init(name: name, command: ProcessCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", script]))
    }

    @Test func prefixesEachLineWithTheChildsName() async throws {
        let file = try CapturedOutput()
        let supervisor = ProcessSupervisor(nameWidth: 6, output: file.output)
        let child = await supervisor.add(shell("echo", "echo one; printf 'two\\nthree'; exec sleep 30"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await child.run() }
            // "three" has no newline: it is written when the output closes, on stop.
            try await waitUntilReady("echo", timeout: Self.patience) { file.lines.count >= 2 }
            await supervisor.stopAll(budget: .seconds(3))
            try await group.waitForAll()
        }
        #expect(Array(file.lines.prefix(3)) == ["echo   | one", "echo   | two", "echo   | three"])
    }

    @Test func restartsACrashedChildWithGrowingBackoff() async throws {
        let file = try CapturedOutput()
        let supervisor = ProcessSupervisor(nameWidth: 5, output: file.output)
        let child = await supervisor.add(shell("flaky", "echo started; exit 3"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await child.run() }
            // The third start comes after 1 s + 2 s of backoff; a busy machine adds spawn time.
            try await waitUntilReady("flaky", timeout: .seconds(20)) { file.lines.filter { $0 == "flaky | started" }.count >= 3 }
            await supervisor.stopAll(budget: .seconds(2))
            try await group.waitForAll()
        }
        let lines = file.lines
        #expect(lines.filter { $0 == "flaky | started" }.count >= 3)
        #expect(lines.contains("flaky | exited with status 3; restarting in 1s"))
        #expect(lines.contains("flaky | exited with status 3; restarting in 2s"))
    }

    @Test func stopsChildrenInReverseOrder() async throws {
        let file = try CapturedOutput()
        let supervisor = ProcessSupervisor(nameWidth: 5, output: file.output)
        var children: [SupervisedProcess] = []
        for name in ["first", "second", "third"] {
            children.append(await supervisor.add(shell(name, "trap 'echo stopping; exit 0' TERM; echo up; while :; do sleep 0.05; done")))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for child in children { group.addTask { await child.run() } }
            try await waitUntilReady("children", timeout: Self.patience) { file.lines.filter { $0.hasSuffix("| up") }.count == 3 }
            await supervisor.stopAll(budget: .seconds(5))
            try await group.waitForAll()
        }
        let stopping = file.lines.filter { $0.hasSuffix("| stopping") }
        #expect(stopping == ["third | stopping", "second | stopping", "first | stopping"])
    }

    @Test func killsAChildThatIgnoresTheStopSignalWithinTheBudget() async throws {
        let file = try CapturedOutput()
        let supervisor = ProcessSupervisor(nameWidth: 8, output: file.output)
        let child = await supervisor.add(shell("stubborn", "trap '' TERM; echo up; while :; do sleep 0.05; done"))
        var stopping = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await child.run() }
            try await waitUntilReady("stubborn", timeout: Self.patience) { file.lines.contains("stubborn | up") }
            stopping = .now
            await supervisor.stopAll(budget: .seconds(1))
            try await group.waitForAll()
        }
        // The 1 s budget, the kill, and the wait for its last output.
        #expect(stopping.duration(to: .now) < .seconds(5))
        #expect(await !child.isRunning)
        #expect(file.lines.contains { $0.hasPrefix("stubborn | did not stop within") })
    }

    @Test func aCancelledSupervisorStopsItsChildInsteadOfRestartingIt() async throws {
        let file = try CapturedOutput()
        let supervisor = ProcessSupervisor(nameWidth: 4, output: file.output)
        let child = await supervisor.add(shell("loop", "echo up; while :; do sleep 0.05; done"))
        let running = Task { await child.run() }
        try await waitUntilReady("loop", timeout: Self.patience) { file.lines.contains("loop | up") }
        let start = ContinuousClock.now
        running.cancel()
        await running.value
        #expect(start.duration(to: .now) < .seconds(3))
        #expect(await !child.isRunning)
        #expect(await child.starts == 1)
    }

    @Test func aCancelledSupervisorKillsAChildThatIgnoresTheStopSignal() async throws {
        let file = try CapturedOutput()
        let supervisor = ProcessSupervisor(nameWidth: 8, output: file.output)
        let child = await supervisor.add(shell("stubborn", "trap '' TERM; echo up; while :; do sleep 0.05; done"))
        let running = Task { await child.run() }
        try await waitUntilReady("stubborn", timeout: Self.patience) { file.lines.contains("stubborn | up") }
        let start = ContinuousClock.now
        running.cancel()
        await running.value
        // Killed after the grace instead of waited on forever. (The margin is for a machine busy
        // with the rest of the suite: 3 s was once not enough, at 9.0 s.)
        #expect(start.duration(to: .now) < SupervisedProcess.cancellationGrace + .seconds(10))
        #expect(await !child.isRunning)
    }
}
