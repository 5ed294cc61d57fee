import AsyncHTTPClient
import Foundation
import LocalStack
import TestSupport
import Testing

/// Render workers as the separate processes docker-compose scales, one of them killed mid-run.
@Suite("Render workers fail over") struct WorkerFailoverTests {
    @Test func twoWorkerProcessesShare200JobsAndWhenOneIsKilledTheOtherFinishesEveryJobOnce() async throws {
        try await WholeStackTurns.take {
            // The API in the test process; the workers are `edit-render --role worker` processes. A
            // six-second session lets the group notice the killed worker quickly.
            try await RenderHarness.with(["RENDER_ROLE": "api", "KAFKA_SESSION_TIMEOUT": "6s"]) { render in
                let user = UUID()
                let total = 200
                // Both workers first, each holding its share of render.jobs' 12 partitions (GET
                // /v1/workers, for admins, names them), and only then the jobs: each worker has
                // work from the start however slowly the other process started (queued before,
                // the first worker could render most of them before the second joined).
                var workerEnvironment = render.environment
                workerEnvironment["RENDER_ROLE"] = "worker"
                workerEnvironment["RENDER_WORKERS"] = "1"
                async let starting = ServiceProcess("edit-render", environment: workerEnvironment)
                async let startingVictim = ServiceProcess("edit-render", environment: workerEnvironment)
                let (survivor, victim) = try await (starting, startingVictim)
                defer {
                    Task {
                        await survivor.stop()
                        await victim.stop()
                    }
                }
                let admin = try testAccessToken(role: "admin", key: render.catalog.key, issuer: RenderHarness.issuer)
                try await waitUntilReady("both workers listed with their partitions", timeout: .seconds(60)) {
                    let listed =
                        (try? await render.apps[0].request(.get, "/v1/workers", headers: [("Authorization", "Bearer \(admin)")]).json()["workers"])
                        as? [[String: Any]] ?? []
                    let held = listed.filter { $0["silent"] as? Bool == false }.map { ($0["partitions"] as? [Int] ?? []) }
                    return held.count == 2 && held.allSatisfy { !$0.isEmpty } && held.flatMap { $0 }.sorted() == Array(0..<12)
                }
                // The jobs, eight requests at a time: a blur at full size, slow enough that the
                // victim still has some when killed.
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for batch in stride(from: 0, to: total, by: 8) {
                        for index in batch..<min(batch + 8, total) {
                            group.addTask {
                                try await render.createEdit(
                                    #"{"source":{"unsplashPhotoId":"FreshFlower-\#(index)"},"filters":[{"name":"sepia"},{"name":"gaussianBlur","radius":12}],"output":{"longestEdge":1080}}"#,
                                    user: user
                                ).status
                            }
                        }
                        for try await status in group { #expect(status == 202) }
                    }
                }

                // Both take part: each renders jobs of its own partitions.
                try await waitUntilReady("both workers rendering", timeout: .seconds(120)) {
                    let (first, second) = (await rendered(by: survivor), await rendered(by: victim))
                    return first > 0 && second > 0
                }
                #expect(try await render.count("edits", where: "status = 'completed'") < total / 2, "too few jobs left to show a failover")
                #expect(try await render.call(.get, "/v1/workers", user: UUID()).status == 403)
                let assignmentsBeforeKill = assignments(of: survivor)
                let victimRendered = await rendered(by: victim)
                await victim.kill()
                let completedAtKill = try await render.count("edits", where: "status = 'completed'")

                // Its unfinished jobs (uncommitted offsets) go to the survivor once the group notices.
                try await waitUntilReady("\(total) completed edits", timeout: .seconds(180)) {
                    (try? await render.count("edits", where: "status = 'completed'")) == total
                }
                #expect(completedAtKill < total, "the kill came after every job was done")
                #expect(victimRendered > 0)
                // The survivor was given the victim's partitions and rendered every job left.
                #expect(assignments(of: survivor) > assignmentsBeforeKill)
                let survivorRendered = await rendered(by: survivor)
                #expect(survivorRendered >= total - completedAtKill, "survivor \(survivorRendered), \(completedAtKill) done at the kill")
                #expect(try await render.count("outbox", where: "type = 'render.edit.completed.v1'") == total)
                #expect(try await render.count("outbox", where: "type = 'render.edit.failed.v1'") == 0)
                #expect(try await render.count("edits", where: "status <> 'completed'") == 0)
                // Every completed edit has its file.
                let files = try FileManager.default.subpathsOfDirectory(atPath: render.blobs.path).filter { $0.hasSuffix("edited.jpg") }
                #expect(files.count == total)
            }
        }
    }

    /// How often the worker was assigned partitions of render.jobs, from its log.
    private func assignments(of worker: ServiceProcess) -> Int {
        worker.output.text.split(separator: "\n").count { $0.contains("Kafka partitions assigned") && $0.contains("render.jobs") }
    }

    /// Renders finished by a worker process, from its `/metrics`.
    private func rendered(by worker: ServiceProcess) async -> Int {
        guard let response = try? await HTTPClient.shared.get(url: worker.baseURL + "/metrics").get(),
            let body = response.body.map({ String(buffer: $0) })
        else { return 0 }
        let line = body.split(separator: "\n").first { $0.hasPrefix("render_job_duration_seconds_count") }
        return line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? 0) } ?? 0
    }
}
