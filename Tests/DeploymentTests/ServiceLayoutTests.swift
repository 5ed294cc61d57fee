import Foundation
import Testing

/// Every service is laid out as `Services/README.md` says ("Writing a service"), so that a
/// newcomer finds any service's routes, migrations and start-up by name alone, and a new service
/// copies one shape.
@Suite("Each service's layout")
struct ServiceLayoutTests {
    @Test func everyServiceHasItsEntryConfigurationApplicationContractAndReadme() throws {
        let services = try Repository.services()
        #expect(services.count >= 6)
        for (executable, module) in services {
            for file in ["main.swift", "\(module)Configuration.swift", "\(module)Application.swift", "openapi.yaml", "README.md"] {
                #expect(Repository.exists("Services/\(module)/\(file)"), "\(executable): Services/\(module)/\(file) is missing")
            }
            let main = try Repository.text("Services/\(module)/main.swift")
            #expect(main.contains("ServiceMain.run"), "\(executable): main.swift does not run ServiceMain")
            #expect(main.split(separator: "\n").count <= 25, "\(executable): main.swift does more than read, build and run")
        }
    }

    @Test func everyServiceWithASchemaHasItsMigrationsAndItsControllersInRoutes() throws {
        for (executable, module) in try Repository.services() where module != "Gateway" {
            let files = try Self.files(under: "Services/\(module)")
            #expect(files.contains { $0.hasPrefix("Migrations/0001_") && $0.hasSuffix(".sql") }, "\(executable): no Migrations/0001_….sql")
            #expect(files.contains { $0.hasPrefix("Routes/") && $0.hasSuffix("Controller.swift") }, "\(executable): no Routes/…Controller.swift")
        }
    }

    @Test func eventsLiveInContractsNotInAServiceFolder() throws {
        for (executable, module) in try Repository.services() {
            #expect(!Repository.exists("Services/\(module)/Events"), "\(executable): its events belong in Shared/Contracts/Events")
        }
        #expect(try Self.files(under: "Shared/Contracts/Events").contains { $0.hasSuffix("Events.swift") })
    }

    /// One way to answer HTTP: routes are registered as named handlers of a `…Controller`
    /// (`use:`), never as inline closures, and no type is called `…Endpoints` beside them.
    @Test func routesAreNamedHandlersOfControllers() throws {
        let closure = try NSRegularExpression(pattern: #"(router|group|rest)\.(get|head|post|put|patch|delete|on)\("[^"]*"(, method: [^)]*)?\) \{"#)
        let endpoints = try NSRegularExpression(pattern: #"(struct|class|enum) \w+Endpoints?\b"#)
        var controllers = 0
        for path in try Repository.files() where path.hasPrefix("Services/") && path.hasSuffix(".swift") {
            let text = try Repository.text(path)
            let range = NSRange(text.startIndex..., in: text)
            #expect(closure.firstMatch(in: text, range: range) == nil, "\(path) registers a route as a closure; give it a named handler")
            #expect(endpoints.firstMatch(in: text, range: range) == nil, "\(path) names a type …Endpoints; controllers are …Controller")
            if path.hasSuffix("Controller.swift") { controllers += 1 }
        }
        #expect(controllers >= 15)
    }

    /// The files below `folder`, by their paths from it.
    static func files(under folder: String) throws -> [String] {
        try Repository.files().filter { $0.hasPrefix(folder + "/") }.map { String($0.dropFirst(folder.count + 1)) }
    }
}
