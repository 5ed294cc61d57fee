import Testing

@Suite("deploy/Dockerfile")
struct DockerfileTests {
    let dockerfile: String
    let stages: [String]

    init() throws {
        dockerfile = try Repository.text("deploy/Dockerfile")
        stages = dockerfile.components(separatedBy: "\nFROM ").dropFirst().map { $0 }
    }

    @Test func buildsTheExecutableNamedByABuildArgumentInASeparateStage() {
        #expect(stages.count == 2)
        #expect(stages.first?.contains("ARG EXECUTABLE") == true)
        #expect(stages.first?.contains(#"swift build -c release --product "${EXECUTABLE}""#) == true)
    }

    @Test func runtimeImageHoldsTheBinaryItsResourcesAndSharedLibraries() throws {
        let runtime = try #require(stages.last)
        for library in ["librdkafka1", "libvips42", "libjpeg62-turbo", "libwebp7", "libjemalloc2"] {
            #expect(runtime.contains(library), "runtime stage lacks \(library)")
        }
        #expect(!runtime.contains("-dev"), "runtime stage installs build packages")
        #expect(runtime.contains("COPY --from=build"))
        #expect(dockerfile.contains("*.resources"), "resource bundles (migrations) are not copied")
    }

    @Test func runsAsANonRootUser() throws {
        let runtime = try #require(stages.last)
        let user = runtime.split(separator: "\n").last { $0.hasPrefix("USER ") }
        #expect(user != nil)
        #expect(user?.contains("root") == false)
        #expect(user?.contains(" 0") == false)
    }
}
