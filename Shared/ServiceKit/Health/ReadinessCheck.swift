/// One dependency `/readyz` checks: a name (`postgres`, `kafka`) and a probe that throws when the
/// dependency cannot be reached.
package struct ReadinessCheck: Sendable {
    package var name: String
    package var probe: @Sendable () async throws -> Void

    package init(_ name: String, probe: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.probe = probe
    }
}
