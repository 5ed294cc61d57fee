import Foundation

/// The parts of a Markdown file the documentation checks read: headings with the anchors GitHub
/// gives them, fenced code blocks, relative links and tables, each with its line number.
///
/// It reads the subset of CommonMark the repository's pages use (ATX headings, fenced blocks,
/// inline links, pipe tables); text inside fenced blocks and code spans is never taken for a
/// heading, link or table.
package struct MarkdownDocument: Sendable {
    package struct Heading: Sendable, Equatable {
        package var level: Int
        package var text: String
        /// The fragment GitHub links the heading by (`## What it owns` → `what-it-owns`).
        package var anchor: String
        package var line: Int
    }

    package struct CodeBlock: Sendable, Equatable {
        /// The info string's first word (`sh`, `swift`, `text`), empty when there is none.
        package var language: String
        package var text: String
        package var line: Int
    }

    package struct Link: Sendable, Equatable {
        package var target: String
        package var line: Int
    }

    package struct Table: Sendable, Equatable {
        package var header: [String]
        package var rows: [[String]]
        package var line: Int
    }

    package private(set) var headings: [Heading] = []
    package private(set) var codeBlocks: [CodeBlock] = []
    package private(set) var links: [Link] = []
    package private(set) var tables: [Table] = []
    package let lineCount: Int
    /// The page without its fenced code blocks (their lines left empty, so line numbers hold):
    /// what a reader reads as sentences.
    package private(set) var prose = ""

    package init(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lineCount = lines.count
        var proseLines: [String] = []
        defer { prose = proseLines.joined(separator: "\n") }
        var anchorUses: [String: Int] = [:]
        var fence: (marker: String, language: String, start: Int, body: [String])?
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let number = index + 1
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            proseLines.append(fence == nil && Self.fenceMarker(trimmed) == nil ? line : "")
            if var open = fence {
                if trimmed.hasPrefix(open.marker), trimmed.allSatisfy({ $0 == open.marker.first }) {
                    codeBlocks.append(CodeBlock(language: open.language, text: open.body.joined(separator: "\n"), line: open.start))
                    fence = nil
                } else {
                    open.body.append(line)
                    fence = open
                }
                index += 1
                continue
            }
            if let marker = Self.fenceMarker(trimmed) {
                let info = trimmed.dropFirst(marker.count).trimmingCharacters(in: .whitespaces)
                fence = (marker, String(info.split(separator: " ").first ?? ""), number, [])
                index += 1
                continue
            }
            if let heading = Self.heading(trimmed) {
                let base = Self.anchor(for: heading.text)
                let uses = anchorUses[base, default: 0]
                anchorUses[base] = uses + 1
                headings.append(Heading(level: heading.level, text: heading.text, anchor: uses == 0 ? base : "\(base)-\(uses)", line: number))
            }
            if trimmed.hasPrefix("|"), index + 1 < lines.count, Self.isTableSeparator(lines[index + 1]) {
                var rows: [[String]] = []
                var next = index + 2
                while next < lines.count, lines[next].trimmingCharacters(in: .whitespaces).hasPrefix("|") {
                    rows.append(Self.cells(lines[next]))
                    next += 1
                }
                tables.append(Table(header: Self.cells(line), rows: rows, line: number))
                for (offset, row) in ([line, lines[index + 1]] + lines[(index + 2)..<next]).enumerated() {
                    links += Self.links(in: row, line: number + offset)
                }
                proseLines += lines[(index + 1)..<next]
                index = next
                continue
            }
            links += Self.links(in: line, line: number)
            index += 1
        }
    }

    /// The lines of the section under the first heading whose text is `title`: from that heading
    /// to the next heading of the same or a higher level. `nil` when there is no such heading.
    package func section(_ title: String) -> ClosedRange<Int>? {
        guard let start = headings.firstIndex(where: { $0.text == title }) else { return nil }
        let level = headings[start].level
        let end = headings[(start + 1)...].first { $0.level <= level }.map { $0.line - 1 } ?? lineCount
        return headings[start].line...end
    }

    /// The anchor GitHub makes of a heading's text: the rendered text (a link's text, a code
    /// span's content) lower-cased, with everything but letters, digits, `-`, `_` and spaces
    /// removed and each space made a hyphen.
    package static func anchor(for heading: String) -> String {
        let rendered = heading.replacingOccurrences(of: #"\[([^\]]*)\]\([^)]*\)"#, with: "$1", options: .regularExpression)
        let kept = rendered.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == " " }
        return kept.replacingOccurrences(of: " ", with: "-")
    }

    private static func fenceMarker(_ trimmed: String) -> String? {
        for marker in ["```", "~~~"] where trimmed.hasPrefix(marker) {
            let run = trimmed.prefix { $0 == marker.first }
            return String(run)
        }
        return nil
    }

    private static func heading(_ trimmed: String) -> (level: Int, text: String)? {
        let hashes = trimmed.prefix { $0 == "#" }
        guard (1...6).contains(hashes.count) else { return nil }
        let rest = trimmed.dropFirst(hashes.count)
        guard rest.isEmpty || rest.first == " " else { return nil }
        var text = rest.trimmingCharacters(in: .whitespaces)
        // A closing sequence of #s is not part of the text.
        while text.hasSuffix("#") { text.removeLast() }
        return (hashes.count, text.trimmingCharacters(in: .whitespaces))
    }

    private static func isTableSeparator(_ line: String) -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("|") && trimmed.contains("-") && trimmed.allSatisfy { "|-: ".contains($0) }
    }

    /// A table row's cells, split at each `|` that is not escaped (`\|`).
    private static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var escaped = false
        for character in line.trimmingCharacters(in: .whitespaces) {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                current.append(character)
                escaped = true
            } else if character == "|" {
                cells.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
        }
        cells.append(current.trimmingCharacters(in: .whitespaces))
        // The leading and trailing pipes leave an empty cell at each end.
        return Array(cells.dropFirst().dropLast())
    }

    private static let inlineLink = try! NSRegularExpression(pattern: #"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#)
    private static let referenceDefinition = try! NSRegularExpression(pattern: #"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)"#)

    private static func links(in line: String, line number: Int) -> [Link] {
        // Code spans are text, not links.
        let text = line.replacingOccurrences(of: #"`[^`]*`"#, with: "``", options: .regularExpression)
        let range = NSRange(text.startIndex..., in: text)
        return (inlineLink.matches(in: text, range: range) + referenceDefinition.matches(in: text, range: range)).compactMap { match in
            Range(match.range(at: 1), in: text).map { Link(target: String(text[$0]), line: number) }
        }
    }
}
