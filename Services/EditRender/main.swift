import Foundation
import ServiceKit

// `edit-render [--role api|worker|all]`; without the flag, RENDER_ROLE (default `all`).
let arguments = CommandLine.arguments
var role: RenderRole?
if let index = arguments.firstIndex(of: "--role") {
    guard index + 1 < arguments.count, let named = RenderRole(rawValue: arguments[index + 1]) else {
        FileHandle.standardError.write(Data("edit-render: --role takes api, worker or all\n".utf8))
        exit(2)
    }
    role = named
}

await ServiceMain.run("edit-render", configuration: EditRenderConfiguration.self) { config, runtime in
    var config = config
    if let role { config.role = role }
    return try await buildApplication(config, runtime: runtime)
}
