import Foundation
import TestSupport
import Testing

/// The memory a real `edit-render --role worker` process needs for the largest source of
/// `Fixtures/photos/SOURCE.md`: the 5640×3172, 16 MB painting, twice at once (one job per core, as
/// `RENDER_WORKERS` defaults to).
@Suite("Render worker memory") struct WorkerMemoryTests {
    @Test func aWorkerRenderingTheLargePaintingTwiceAtOnceStaysUnder400MB() async throws {
        let painting = Array(try Data(contentsOf: LargePainting.url))
        try await RenderHarness.with(["RENDER_ROLE": "api"]) { render in
            let user = UUID()
            let upload = try await render.upload(painting, user: user)
            #expect(upload.status == 201)
            let uploadId = try #require(try upload.json()["uploadId"] as? String)
            var workerEnvironment = render.environment
            workerEnvironment["RENDER_ROLE"] = "worker"
            workerEnvironment["RENDER_WORKERS"] = "2"
            let worker = try await ServiceProcess("edit-render", environment: workerEnvironment)
            defer { Task { await worker.stop() } }
            let idle = try #require(worker.memory())

            var ids: [String] = []
            for _ in 0..<2 {
                let created = try await render.createEdit(
                    #"{"source":{"uploadId":"\#(uploadId)"},"filters":[{"name":"sepia"},{"name":"vignette","intensity":0.6}]}"#,
                    user: user
                )
                #expect(created.status == 202)
                ids.append(try #require(try created.json()["id"] as? String))
            }
            for id in ids {
                let edit = try await render.finished(id, user: user, timeout: .seconds(120))
                #expect(edit["status"] as? String == "completed", "\(edit)")
            }
            let after = try #require(worker.memory())
            print(
                "edit-render worker: \(idle.resident >> 20) MB resident idle, \(after.peak >> 20) MB peak after rendering the 5640×3172 painting twice at once, \(after.resident >> 20) MB resident after"
            )
            #expect(after.peak < 400 << 20, "peak \(after.peak >> 20) MB")
        }
    }
}
