import Foundation
import RoadNetwork
import TestSupport
import Testing

@testable import Tracking

@Suite("Restaurants") struct RestaurantsTests {
    typealias Person = TrackingHarness.Person

    /// Coordinates a hair from zero (as a fuzzer sends them) once made the distance's float8
    /// arithmetic underflow, which Postgres reports as an error: a 500 for `near=0,0`.
    @Test func restaurantsAHairFromZeroAreZeroMetresFromIt() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            for (lat, lng) in [(1e-200, 1e-200), (Double.leastNonzeroMagnitude, 0), (0, -Double.leastNormalMagnitude / 1_000)] {
                _ = try await tracking.restaurant(owner: owner, lat: lat, lng: lng)
            }
            for near in ["0,0", "1e-300,0"] {
                let page = try await tracking.call(.get, "/v1/restaurants?near=\(near)&radius=100", as: Person(role: .customer)).json()
                let distances = (page["items"] as? [[String: Any]] ?? []).compactMap { $0["distanceM"] as? Int }
                #expect(distances == [0, 0, 0], "near=\(near)")
            }
        }
    }

    @Test func theNearestComeFirstWithTheirDistanceAndPagesDoNotRepeat() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            // The railway station, Stockmann, the cathedral; asked from the station.
            for (lat, lng) in [(60.1719, 24.9414), (60.1685, 24.9420), (60.1702, 24.9523)] {
                _ = try await tracking.restaurant(owner: owner, lat: lat, lng: lng)
            }
            let first = try await tracking.call(.get, "/v1/restaurants?near=60.1719,24.9414&limit=2", as: customer).json()
            let items = try #require(first["items"] as? [[String: Any]])
            let distances = items.compactMap { $0["distanceM"] as? Int }
            #expect(distances.count == 2 && distances[0] == 0 && distances[1] > 300 && distances[1] < 450)
            let cursor = try #require(first["nextCursor"] as? String)
            let second = try await tracking.call(.get, "/v1/restaurants?near=60.1719,24.9414&limit=2&cursor=\(cursor)", as: customer).json()
            let rest = try #require(second["items"] as? [[String: Any]])
            #expect(rest.count == 1)
            #expect((rest[0]["distanceM"] as? Int ?? 0) > distances[1])
            #expect(second["nextCursor"] is NSNull)
            // Within a radius; bad parameters are named.
            let near = try await tracking.call(.get, "/v1/restaurants?near=60.1719,24.9414&radius=100", as: customer).json()
            #expect((near["items"] as? [Any])?.count == 1)
            // Without near: oldest first, every one once over the pages.
            var seen: [String] = []
            var after: String? = nil
            repeat {
                let page = try await tracking.call(.get, "/v1/restaurants?limit=2" + (after.map { "&cursor=\($0)" } ?? ""), as: customer).json()
                seen += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                after = page["nextCursor"] as? String
            } while after != nil
            #expect(seen.count == 3 && Set(seen).count == 3)
            #expect(try await tracking.call(.get, "/v1/restaurants?open=false", as: customer).json()["items"] as? [Any] != nil)
            for (query, parameter) in [
                ("near=91,0", "near"), ("radius=5", "radius"), ("open=maybe", "open"), ("cursor=zz", "cursor"), ("limit=0", "limit"),
            ] {
                let response = try await tracking.call(.get, "/v1/restaurants?\(query)", as: customer)
                #expect(response.status == 422 && response.text.contains(parameter), "\(query)")
            }
        }
    }

    /// The list a phone keeps offline: a restaurant edited or its menu replaced, and one opened,
    /// are what a sync from the earlier answer gets; nothing the second time.
    @Test func aSyncGetsTheRestaurantsChangedAndOpenedSinceItsToken() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let edited = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let menu = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let quiet = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let first = try await tracking.call(.get, "/v1/restaurants?limit=2", as: customer).json()
            let token = try #require(first["syncToken"] as? String)
            // The next page gives the first page's token.
            let cursor = try #require(first["nextCursor"] as? String)
            #expect(try await tracking.call(.get, "/v1/restaurants?limit=2&cursor=\(cursor)", as: customer).json()["syncToken"] as? String == token)
            #expect(
                try await tracking.call(.patch, "/v1/restaurants/\(edited)", as: owner, headers: [("If-Match", "\"1\"")], json: #"{"isOpen":false}"#)
                    .status == 200
            )
            let replaced = try await tracking.call(
                .put,
                "/v1/restaurants/\(menu)/menu",
                as: owner,
                headers: [("If-Match", "\"1\"")],
                json: #"[{"id":"m9","name":"Soup","priceCents":900,"available":true}]"#
            )
            #expect(replaced.status == 200, "\(replaced.text)")
            let opened = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let synced = try await tracking.call(.get, "/v1/restaurants?since=\(token)", as: customer).json()
            let changed = Set((synced["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
            #expect(changed == [edited, menu, opened] && !changed.contains(quiet), "\(synced)")
            #expect((synced["deleted"] as? [Any])?.isEmpty == true)
            let again = try await tracking.call(.get, "/v1/restaurants?since=\(try #require(synced["syncToken"] as? String))", as: customer).json()
            #expect((again["items"] as? [Any])?.isEmpty == true)
            let filtered = try await tracking.call(.get, "/v1/restaurants?open=true&since=\(token)", as: customer)
            #expect(filtered.status == 422 && filtered.text.contains("since"))
        }
    }

    @Test func onlyTheOwnerOrAnAdminChangesARestaurantAtTheVersionTheyRead() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let other = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let id = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            #expect(try await tracking.call(.post, "/v1/restaurants", as: owner, json: "{}").status == 403)
            #expect(try await tracking.call(.patch, "/v1/restaurants/\(id)", as: owner, json: #"{"isOpen":false}"#).status == 428)
            #expect(
                try await tracking.call(.patch, "/v1/restaurants/\(id)", as: other, headers: [("If-Match", "\"1\"")], json: #"{"isOpen":false}"#)
                    .status == 403
            )
            #expect(
                try await tracking.call(.patch, "/v1/restaurants/\(id)", as: customer, headers: [("If-Match", "\"1\"")], json: #"{"isOpen":false}"#)
                    .status == 403
            )
            let closed = try await tracking.call(
                .patch,
                "/v1/restaurants/\(id)",
                as: owner,
                headers: [("If-Match", "\"1\"")],
                json: #"{"isOpen":false,"openingHours":{"mon":"10-22"}}"#
            )
            #expect(closed.status == 200)
            #expect(closed.headers["etag"] == "\"2\"")
            #expect(try closed.json()["isOpen"] as? Bool == false)
            #expect((try closed.json()["openingHours"] as? [String: String]) == ["mon": "10-22"])
            #expect(
                try await tracking.call(.patch, "/v1/restaurants/\(id)", as: owner, headers: [("If-Match", "\"1\"")], json: #"{"isOpen":true}"#)
                    .status == 412
            )
            // The menu, replaced whole; each bad item named.
            let menu = try await tracking.call(
                .put,
                "/v1/restaurants/\(id)/menu",
                as: tracking.adminPerson,
                headers: [("If-Match", "\"2\"")],
                json: #"[{"id":"s1","name":"Soup","priceCents":900},{"id":"s2","name":"Bread","priceCents":300,"available":false}]"#
            )
            #expect(menu.status == 200)
            #expect((try menu.json()["menu"] as? [[String: Any]])?.map { $0["id"] as? String } == ["s1", "s2"])
            let bad = try await tracking.call(
                .put,
                "/v1/restaurants/\(id)/menu",
                as: owner,
                headers: [("If-Match", "\"3\"")],
                json: #"[{"id":"s1","name":"Soup","priceCents":-1},{"id":"s1","name":"","priceCents":1}]"#
            )
            #expect(bad.status == 422)
            #expect(bad.text.contains("/0/priceCents") && bad.text.contains("/1/name") && bad.text.contains("/1/id"))
            #expect(try await tracking.call(.get, "/v1/restaurants/\(id)", as: customer).headers["etag"] == "\"3\"")
        }
    }

    @Test func openingHoursAreHelsinkiTimeAndClosedDaysAreClosed() throws {
        // Wednesday 25 November 2026, 12:00 in Helsinki (10:00 UTC); and 01:00 the next night.
        let noon = Date(timeIntervalSince1970: 1_795_600_800)
        let lateNight = noon.addingTimeInterval(13 * 3_600)
        #expect(OpeningHours.isOpen(nil, at: noon))
        #expect(OpeningHours.isOpen(["wed": "10-22"], at: noon))
        #expect(!OpeningHours.isOpen(["wed": "13-22"], at: noon))
        #expect(!OpeningHours.isOpen(["thu": "00-24"], at: noon))
        #expect(OpeningHours.isOpen(["wed": "11:30-12:30,17-23"], at: noon))
        // Past midnight: Wednesday's 18-02 still holds at Thursday 01:00.
        #expect(OpeningHours.isOpen(["wed": "18-02"], at: lateNight))
        #expect(!OpeningHours.isOpen(["wed": "18-23"], at: lateNight))
        #expect(OpeningHours.ranges("25-26") == nil && OpeningHours.ranges("10") == nil && OpeningHours.ranges("9:75-10") == nil)
    }

    @Test func anOrderOutsideTheOpeningHoursIsRefusedAndBadHoursAreNamed() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let id = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            // Open one minute a day, at 03:00 Helsinki time: closed now, unless the test runs then.
            let hours = OpeningHours.days.map { "\"\($0)\":\"03:00-03:01\"" }.joined(separator: ",")
            #expect(
                try await tracking.call(
                    .patch,
                    "/v1/restaurants/\(id)",
                    as: owner,
                    headers: [("If-Match", "\"1\"")],
                    json: "{\"openingHours\":{\(hours)}}"
                ).status == 200
            )
            if !OpeningHours.isOpen(Dictionary(uniqueKeysWithValues: OpeningHours.days.map { ($0, "03:00-03:01") }), at: Date()) {
                let refused = try await tracking.place(at: id, as: customer)
                #expect(refused.status == 409)
                #expect(try refused.json()["type"] as? String == "urn:splash:problem:restaurant-closed")
            }
            let bad = try await tracking.call(
                .patch,
                "/v1/restaurants/\(id)",
                as: owner,
                headers: [("If-Match", "\"2\"")],
                json: #"{"openingHours":{"monday":"10-22","tue":"late"}}"#
            )
            #expect(bad.status == 422)
            #expect(bad.text.contains("/openingHours/monday") && bad.text.contains("/openingHours/tue"))
            // Always open again.
            #expect(
                try await tracking.call(.patch, "/v1/restaurants/\(id)", as: owner, headers: [("If-Match", "\"2\"")], json: #"{"openingHours":null}"#)
                    .status == 200
            )
            #expect(try await tracking.place(at: id, as: customer).status == 201)
        }
    }

    @Test func seededMenusFitThePlaceAndAreTheSameEveryTime() throws {
        let graph = try RoadGraph.helsinki()
        for place in graph.places {
            let menu = MenuGenerator.menu(amenity: place.amenity, cuisine: place.cuisine, osmNode: place.osmNode)
            #expect((6...12).contains(menu.count), "\(place.name)")
            #expect(menu.allSatisfy { $0.available && $0.priceCents > 0 && $0.priceCents % 10 == 0 })
            #expect(Set(menu.map(\.name)).count == menu.count)
            #expect(menu == MenuGenerator.menu(amenity: place.amenity, cuisine: place.cuisine, osmNode: place.osmNode))
        }
        let cafe = try #require(graph.places.first { $0.amenity == "cafe" && $0.cuisine == nil })
        let coffee = [
            "Cappuccino", "Caffè latte", "Espresso", "Filter coffee", "Tea", "Cinnamon bun", "Blueberry pie", "Croissant",
            "Cheese sandwich", "Salmon sandwich", "Karelian pie", "Chocolate cake", "Hot chocolate",
        ]
        #expect(MenuGenerator.menu(amenity: cafe.amenity, cuisine: nil, osmNode: cafe.osmNode).allSatisfy { coffee.contains($0.name) })
    }

    /// Replicas seeding one empty database at once: each place once, and no replica fails (they
    /// raced on the id's unique index, and the loser stopped while starting).
    @Test func seedersRacingOnAnEmptyTableEachLeaveEveryPlaceOnce() async throws {
        try await TrackingHarness.with { tracking in
            try await tracking.insertFixturePlaces(seeders: 6)
            let places = try RoadGraph.helsinki().places
            #expect(try await tracking.database.count("tracking.restaurants") == places.count)
            #expect(try await tracking.database.count("tracking.restaurants", where: "osm_node IS NOT NULL") == Set(places.map(\.osmNode)).count)
            // Each announced once (created), so consumers such as notify know its name.
            #expect(try await tracking.database.count("tracking.outbox", where: "type = 'tracking.restaurant.changed.v1'") == places.count)
        }
    }
}
