import DataAPI
import HTTPTypes
import Testing

@Suite("PostgREST query strings") struct QueryParsingTests {
    @Test func theGrammarTheAppsSendParsesIntoItsParts() throws {
        let query = try DataQuery(
            query: "select=id,when:created_at,caption&user_id=eq.6F9619FF-8B86-D011-B42D-00C04FC964FF"
                + "&caption=not.ilike.*hello+world*&id=in.(a,%22b,c%22,d)&deleted_at=is.null&order=created_at.desc.nullslast,id&limit=20&offset=40"
        )
        #expect(query.select == [.init(column: "id"), .init(alias: "when", column: "created_at"), .init(column: "caption")])
        #expect(
            query.filters == [
                .init(column: "user_id", .eq, .value("6F9619FF-8B86-D011-B42D-00C04FC964FF")),
                .init(column: "caption", negated: true, .ilike, .value("*hello world*")),
                .init(column: "id", .in, .list(["a", "b,c", "d"])),
                .init(column: "deleted_at", .is, .truth(.null)),
            ]
        )
        #expect(query.order == [.init(column: "created_at", descending: true, nulls: .last), .init(column: "id")])
        #expect(query.limit == 20 && query.offset == 40)
    }

    @Test func aPlusIsASpaceAndAnEncodedPlusIsAPlus() throws {
        let query = try DataQuery(query: "name=eq.a+b%2Bc&x=in.%28%22one+two%22%2Cthree%29")
        #expect(query.filters[0].operand == .value("a b+c"))
        #expect(query.filters[1].operand == .list(["one two", "three"]))
    }

    @Test func valuesKeepTheirDotsAndQuotedListsTheirEscapes() throws {
        let query = try DataQuery(query: #"photo_key=eq.unsplash:abc.def&tag=in.("a\"b","c\\d",())"#.replacingOccurrences(of: "()", with: "\"()\""))
        #expect(query.filters[0].operand == .value("unsplash:abc.def"))
        #expect(query.filters[1].operand == .list(["a\"b", "c\\d", "()"]))
        #expect(try DataQuery(query: "id=in.()").filters[0].operand == .list([]))
    }

    @Test(arguments: [
        "id=equals.3", "id=eq", "id=in.(a,b", "id=in.a,b", "id=in.(a,\"b)", "id=is.maybe", "order=id.sideways", "order=id.desc.asc",
        "limit=-1", "limit=ten", "offset=1.5", "select=id,(x)", "select=posts(*)", "select=*,author(*)", "id=cs.{1}", "select=id::text",
        "select=a:b:c", "or=(a.eq.1,b.eq.2)",
        "select=data->x", "id=in.(a,,b)x", "%zz=eq.1", "name=eq.%C3%28",
    ])
    func malformedPartsAreRefusedAsPGRST100(_ text: String) {
        do {
            let query = try DataQuery(query: text)
            Issue.record("\(text) parsed as \(query)")
        } catch {
            #expect(error.code == "PGRST100" && error.status == .badRequest, "\(text): \(error)")
        }
    }

    @Test func anInListHoldsAtMostTenThousandValues() throws {
        let values = (0..<5_000).map { "v\($0)" }.joined(separator: ",")
        #expect(try DataQuery(query: "id=in.(\(values))").filters[0].operand == .list((0..<5_000).map { "v\($0)" }))
        let tooMany = (0...DataQuery.maxListValues).map(String.init).joined(separator: ",")
        #expect(throws: DataAPIError.self) { try DataQuery(query: "id=in.(\(tooMany))") }
    }

    @Test func preferAcceptAndProfilesAreReadAsPostgRESTReadsThem() throws {
        var headers: HTTPFields = [HTTPField.Name("Prefer")!: "return=representation,count=exact", .accept: "application/vnd.pgrst.object+json"]
        headers.append(HTTPField(name: HTTPField.Name("Prefer")!, value: " resolution=ignore-duplicates , tx=commit"))
        headers[HTTPField.Name("Accept-Profile")!] = "public"
        let preferences = try RequestPreferences(headers)
        #expect(
            preferences.returning == .representation && preferences.count && preferences.resolution == .ignoreDuplicates
                && preferences.shape == .object
        )
        #expect(try RequestPreferences([.accept: "*/*"]).shape == .array)
        #expect(
            throws: DataAPIError(
                .notAcceptable,
                code: "PGRST106",
                message: "The schema must be one of the following: public",
                details: "Asked for storage"
            )
        ) {
            try RequestPreferences([HTTPField.Name("Content-Profile")!: "storage"])
        }
        #expect(throws: DataAPIError.self) { try RequestPreferences([.accept: "text/csv"]) }
    }
}
