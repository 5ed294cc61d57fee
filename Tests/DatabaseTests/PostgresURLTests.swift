import Database
import PostgresNIO
import ServiceKit
import Testing

@Suite("DATABASE_URL")
struct PostgresURLTests {
    @Test func readsEveryPartOfTheURL() throws {
        let configuration = try PostgresURL.parse(
            "postgres://splash_auth:p%40ss%3Aword@db.internal:6543/splash?sslmode=disable&application_name=auth"
        )
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "splash_auth")
        #expect(configuration.password == "p@ss:word")
        #expect(configuration.database == "splash")
        #expect(configuration.options.additionalStartupParameters.contains { $0 == ("application_name", "auth") })
    }

    @Test func defaultsThePort() throws {
        #expect(try PostgresURL.parse("postgresql://u@localhost/db").port == 5432)
    }

    @Test func rejectsWhatIsNotAPostgresURL() {
        #expect(throws: PostgresURL.ParseError.notAPostgresURL) { try PostgresURL.parse("mysql://u@h/db") }
        #expect(throws: PostgresURL.ParseError.missingUser) { try PostgresURL.parse("postgres://h/db") }
        #expect(throws: PostgresURL.ParseError.unsupportedSSLMode("sometimes")) { try PostgresURL.parse("postgres://u@h/db?sslmode=sometimes") }
    }

    @Test func reportsABadURLWithoutRevealingIt() {
        let reader = ConfigurationReader(["DATABASE_URL": "postgres://user:hunter2@/db"])
        do {
            _ = try DatabaseSettings(from: reader)
            Issue.record("a URL without a host was accepted")
        } catch {
            #expect(error.variable == "DATABASE_URL")
            #expect(!error.description.contains("hunter2"))
        }
    }
}
