/// Why the local stack could not start; each says what to do.
package enum LocalStackError: Error, CustomStringConvertible {
    case postgresNotFound
    case noUnprivilegedUser
    case alreadyRunning(what: String, detail: String)
    case notReady(name: String, reason: String)

    package var description: String {
        switch self {
        case .postgresNotFound:
            return
                "Postgres server programs not found: install Postgres (initdb and postgres), put them on PATH, or set SPLASH_POSTGRES_BIN to their directory"
        case .noUnprivilegedUser:
            return
                "Postgres refuses to run as root and there is no 'postgres' user to run it as: create one (useradd --system postgres) or run as another user"
        case .alreadyRunning(let what, let detail):
            return "\(what) is already running (\(detail)); stop it first"
        case .notReady(let name, let reason):
            return "\(name) did not become ready: \(reason)"
        }
    }
}
