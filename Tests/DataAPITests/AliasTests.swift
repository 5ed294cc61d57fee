import DataAPI
import Testing

/// A column known by two names (an app's own and Splash's): the same SQL wherever a query names
/// either, and a filter's value as the column stores it.
@Suite("Column aliases") struct AliasTests {
    static let object = TableDescription.Column("object_key", .text, writable: true) { $0.hasPrefix("posts/") ? $0 : "posts/" + $0 }
    static let author = TableDescription.Column("user_id", .uuid, writable: true)
    static let table = TableDescription(
        name: "posts",
        source: "posts",
        columns: [.init("id", .uuid), author, .alias("author", of: author), object, .alias("media_key", of: object)],
        primaryKey: ["id"]
    )

    @Test func anAliasSelectsFiltersAndOrdersAsItsColumn() throws {
        let renderer = SQLRenderer(table: Self.table)
        let sql = try renderer.read(DataQuery(query: "select=id,author,media_key&author=eq.ABC&order=author.desc")).sql
        #expect(sql.contains(#""user_id" AS "author""#), "\(sql)")
        #expect(sql.contains(#""object_key" AS "media_key""#), "\(sql)")
        #expect(sql.contains(#"WHERE "user_id" = $1::uuid"#), "\(sql)")
        #expect(sql.contains(#"ORDER BY "user_id" DESC"#), "\(sql)")
        // select=* answers both names.
        let all = try renderer.read(DataQuery(query: "")).sql
        #expect(all.contains(#"AS "author""#) && all.contains(#"AS "user_id""#) && all.contains(#"AS "media_key""#), "\(all)")
        #expect(Self.table.column("author")?.canonical == "user_id" && Self.table.column("user_id")?.canonical == "user_id")
    }

    @Test func aValueIsWrittenAsTheColumnStoresIt() {
        #expect(Self.object.normalized("u/p.jpg") == "posts/u/p.jpg")
        #expect(Self.object.normalized("posts/u/p.jpg") == "posts/u/p.jpg")
        #expect(Self.table.column("media_key")?.normalized("u/p.jpg") == "posts/u/p.jpg")
        #expect(Self.author.normalized("ABC") == "ABC")
    }
}
