import Database
import Testing

@Suite("Splitting SQL scripts into statements")
struct SQLScriptTests {
    @Test func splitsOnStatementEndingSemicolons() {
        #expect(
            SQLScript.statements(in: "CREATE TABLE a (x int);\nCREATE TABLE b (y int);") == [
                "CREATE TABLE a (x int)", "CREATE TABLE b (y int)",
            ]
        )
    }

    @Test func keepsSemicolonsInsideStringsIdentifiersAndComments() {
        let script = """
            INSERT INTO t VALUES ('a;b', 'it''s; fine');
            SELECT "odd;name" FROM t; -- trailing; comment
            /* block; /* nested; */ still comment; */ SELECT 1;
            SELECT E'back\\'slash; quote';
            """
        #expect(
            SQLScript.statements(in: script) == [
                "INSERT INTO t VALUES ('a;b', 'it''s; fine')",
                #"SELECT "odd;name" FROM t"#,
                "-- trailing; comment\n/* block; /* nested; */ still comment; */ SELECT 1",
                "SELECT E'back\\'slash; quote'",
            ]
        )
    }

    @Test func keepsDollarQuotedBodiesWhole() {
        let script = """
            CREATE FUNCTION f() RETURNS int AS $$ BEGIN RETURN 1; END; $$ LANGUAGE plpgsql;
            CREATE FUNCTION g() RETURNS text AS $fn$ SELECT '$$;'; $fn$ LANGUAGE sql;
            SELECT $1::int;
            """
        let statements = SQLScript.statements(in: script)
        #expect(statements.count == 3)
        #expect(statements[0].hasSuffix("END; $$ LANGUAGE plpgsql"))
        #expect(statements[1] == "CREATE FUNCTION g() RETURNS text AS $fn$ SELECT '$$;'; $fn$ LANGUAGE sql")
        #expect(statements[2] == "SELECT $1::int")
    }

    @Test func dropsStatementsThatAreOnlyCommentsOrSpace() {
        #expect(SQLScript.statements(in: "-- nothing here\n;\n  ;/* nor here */") == [])
        #expect(SQLScript.statements(in: "SELECT 1") == ["SELECT 1"])
    }
}
