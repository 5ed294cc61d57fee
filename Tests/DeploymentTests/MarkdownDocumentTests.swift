import TestSupport
import Testing

@Suite("Reading Markdown as GitHub renders it")
struct MarkdownDocumentTests {
    @Test func headingsGetGitHubsAnchorsAndRepeatsAreNumbered() {
        let page = MarkdownDocument(
            """
            # gateway — the apps' one entry point
            ## What `make run` starts
            ### Live events: WebSocket `/v1/realtime` and SSE `/v1/events`
            ## Events
            ## Events ##
            ## [Linked](elsewhere.md) title
            """
        )
        #expect(
            page.headings.map(\.anchor) == [
                "gateway--the-apps-one-entry-point", "what-make-run-starts",
                "live-events-websocket-v1realtime-and-sse-v1events", "events", "events-1", "linked-title",
            ]
        )
        #expect(page.headings.map(\.level) == [1, 2, 3, 2, 2, 2])
    }

    @Test func codeBlocksAreNeitherHeadingsNorLinksNorTables() {
        let page = MarkdownDocument(
            """
            Intro with [a link](a.md) and `[no link](b.md)` in code.

            ```sh title
            # a comment, not a heading
            echo "[no link](c.md)"
            | not | a table |
            |---|---|
            ```
            ~~~
            ```
            ~~~
            """
        )
        #expect(page.headings.isEmpty)
        #expect(page.links.map(\.target) == ["a.md"])
        #expect(page.links.map(\.line) == [1])
        #expect(page.tables.isEmpty)
        #expect(page.codeBlocks.map(\.language) == ["sh", ""])
        #expect(page.codeBlocks.first?.text == "# a comment, not a heading\necho \"[no link](c.md)\"\n| not | a table |\n|---|---|")
        #expect(page.codeBlocks.last?.text == "```")
    }

    @Test func tableCellsSplitAtUnescapedPipesAndKeepTheirLinks() {
        let page = MarkdownDocument(
            """
            | variable | meaning |
            |---|---|
            | `A` / `A_FILE` | `x\\|y`, see [there](docs/x.md#y) |
            | `B` | plain |

            after
            """
        )
        let table = page.tables.first
        #expect(table?.header == ["variable", "meaning"])
        #expect(table?.rows == [["`A` / `A_FILE`", "`x\\|y`, see [there](docs/x.md#y)"], ["`B`", "plain"]])
        #expect(table?.line == 1)
        #expect(page.links.map(\.target) == ["docs/x.md#y"])
        #expect(page.links.map(\.line) == [3])
    }

    @Test func aSectionRunsToTheNextHeadingOfItsLevel() {
        let page = MarkdownDocument(
            """
            # Title
            ## One
            text
            ### Inside
            more
            ## Two
            last
            """
        )
        #expect(page.section("One") == 2...5)
        #expect(page.section("Two") == 6...7)
        #expect(page.section("Missing") == nil)
    }
}
