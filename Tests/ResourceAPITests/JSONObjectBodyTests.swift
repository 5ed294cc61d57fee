import Foundation
import ResourceAPI
import ServiceKit
import Testing

/// A body read through `JSONObjectBody`: what the typed APIs and the data API's rows rely on.
@Suite("Request bodies read field by field")
struct JSONObjectBodyTests {
    /// A body as the services declare theirs.
    struct Profile: JSONObjectBody {
        var name: String
        var age: Int
        var bio: String?

        init(reading body: inout JSONObject) throws {
            let name = body.text("name", required: true, maxCharacters: 5, allowEmpty: false)
            let age = body.integer("age", required: true, in: 0...150)
            bio = body.text("bio", required: false, maxCharacters: 10)
            (self.name, self.age) = try body.validated(name, age)
        }
    }

    func decode(_ json: String) throws -> Profile {
        try JSONObject.decode(Profile.self, from: Array(json.utf8))
    }

    func problem(_ json: String) -> Problem? {
        do {
            _ = try decode(json)
            return nil
        } catch {
            return error as? Problem
        }
    }

    @Test func aValidBodyGivesItsFieldsAndItsOptionalOnes() throws {
        let profile = try decode(#"{"name":"Ana","age":30,"unknown":true}"#)
        #expect(profile.name == "Ana" && profile.age == 30 && profile.bio == nil)
        #expect(try decode(#"{"name":"Ana","age":30,"bio":"hi"}"#).bio == "hi")
    }

    @Test func everyBadFieldIsA422NamingItAllAtOnce() throws {
        let refused = try #require(problem(#"{"name":"Anastasia","age":"thirty","bio":7}"#))
        #expect(refused.status == .unprocessableContent)
        #expect(
            refused.errors.map(\.detail) == [
                "name is 9 characters long; at most 5", "age must be a whole number from 0 to 150", "bio must be a string",
            ]
        )
    }

    @Test func aMissingRequiredFieldIsA422NotAServerError() throws {
        for json in [#"{}"#, #"{"age":1}"#, #"{"name":"Ana"}"#, #"{"name":{},"age":{}}"#] {
            let refused = try #require(problem(json), "\(json)")
            #expect(refused.status == .unprocessableContent, "\(json): \(refused)")
        }
    }

    @Test(arguments: ["", "[1,2]", "42", "{\"name\":", "not json", #"{"name":"A\u0000","age":1}"#])
    func whatIsNoJSONObjectIsA400(json: String) throws {
        let refused = try #require(problem(json))
        #expect(refused.status == .badRequest)
        #expect(refused.type == "urn:splash:problem:malformed-body")
    }
}
