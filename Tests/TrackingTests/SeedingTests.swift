import AsyncHTTPClient
import Foundation
import Identity
import LocalStack
import NIOFoundationCompat
import RoadNetwork
import TestSupport
import Testing

@testable import Tracking

/// tracking and auth as their own processes: on an empty database tracking seeds the fixture's
/// places, each owned by an account it made through auth's admin API; started again (or a second
/// replica), it makes nothing twice.
/// tracking's tests that run several real processes each, one after another: side by side they
/// starve a two-core machine (and the rest of the suite with it).
@Suite(.serialized) enum TrackingAsProcesses {}

extension TrackingAsProcesses {
    @Suite("Seeding") struct SeedingTests {
        @Test func theFixturesPlacesAreSeededOnceEachWithItsOwnersAccount() async throws {
            try await WholeStackTurns.take {
                let database = try await TestPostgres.shared.makeDatabase()
                let kafka = try await TestKafka.shared.running()
                let issuer = "http://localhost:8080/auth/v1"
                let serviceToken = "auth-service-token-for-tests-0123456789"
                let common = [
                    "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
                    "OUTBOX_POLL_INTERVAL": "100ms", "LOG_LEVEL": "warning",
                ].merging(ServiceHarness.consumerGroups()) { own, _ in own }
                let key = SigningKey.generate()
                let auth = try await ServiceProcess(
                    "auth",
                    environment: common.merging([
                        "DATABASE_URL": try await database.makeServiceRole(schema: "auth", password: "seed-auth").url, "AUTH_JWT_KEY": key.pem,
                        "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4", "AUTH_SERVICE_TOKEN": serviceToken,
                    ]) { _, new in new }
                )
                let tracking = [
                    "DATABASE_URL": try await database.makeServiceRole(schema: "tracking", password: "seed-tracking").url,
                    "TRACKING_JWKS_URL": "\(auth.baseURL)/auth/v1/.well-known/jwks.json", "TRACKING_JWT_ISSUER": issuer,
                    "TRACKING_AUTH_URL": auth.baseURL, "AUTH_SERVICE_TOKEN": serviceToken,
                ].merging(common) { own, _ in own }
                // Two replicas at once on the empty database.
                // Seeding comes before readiness: 350 accounts through auth, slow on a loaded machine.
                async let first = ServiceProcess("tracking", environment: tracking, readyWithin: .seconds(180))
                async let second = ServiceProcess("tracking", environment: tracking, readyWithin: .seconds(180))
                let replicas = try await [first, second]
                let places = try RoadGraph.helsinki().places.count
                #expect(try await database.count("tracking.restaurants") == places)
                #expect(
                    try await database.count("auth.users", where: "role = 'restaurant' AND email LIKE 'owner-%@restaurants.splash.example'") == places
                )
                #expect(
                    try await database.count(
                        "tracking.restaurants r",
                        where: "NOT EXISTS (SELECT 1 FROM auth.users u WHERE u.id = r.owner_id AND u.role = 'restaurant')"
                    ) == 0
                )
                #expect(try await database.count("tracking.restaurants", where: "jsonb_array_length(menu) BETWEEN 6 AND 12") == places)

                // The owner's account (a token auth's key signs for it) reads its restaurant: the first place of the fixture.
                let token = try testAccessToken(user: RestaurantSeeder.ownerID(56_418_307), role: "restaurant", key: key, issuer: issuer)
                var request = HTTPClientRequest(url: "\(replicas[0].baseURL)/v1/restaurants/\(RestaurantSeeder.restaurantID(56_418_307).lowercased)")
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                #expect(response.status == .ok)
                let mine = try #require(
                    try JSONSerialization.jsonObject(with: Data(buffer: try await response.body.collect(upTo: 1 << 20))) as? [String: Any]
                )
                #expect(mine["name"] as? String == "Ravintolalaiva M/S Maria")
                #expect(mine["ownerId"] as? String == RestaurantSeeder.ownerID(56_418_307).lowercased)

                // Started again on a seeded database: nothing new.
                for replica in replicas { await replica.stop() }
                let again = try await ServiceProcess("tracking", environment: tracking)
                #expect(try await database.count("tracking.restaurants") == places)
                await again.stop()
                await auth.stop()
            }
        }
    }
}
