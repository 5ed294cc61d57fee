import Foundation

/// The benchmarks' command-line options: `--name value` pairs.
package enum BenchmarkArguments {
    /// The whole number after `name` (`--seconds 10`), or `value` when `name` is not given.
    package static func integer(_ name: String, default value: Int) -> Int {
        guard let text = self.value(after: name, else: "\(name) takes a whole number") else { return value }
        guard let number = Int(text) else { fatalError("\(name) takes a whole number") }
        return number
    }

    /// Whether `name` (`--floor`), an option without a value, is given.
    package static func flag(_ name: String) -> Bool {
        CommandLine.arguments.contains(name)
    }

    /// The comma-separated whole numbers after `name` (`--loads 32,4,1`), or `value`.
    package static func integers(_ name: String, default value: [Int]) -> [Int] {
        let usage = "\(name) takes whole numbers separated by commas"
        guard let text = self.value(after: name, else: usage) else { return value }
        let numbers = text.split(separator: ",").compactMap { Int($0) }
        guard !numbers.isEmpty else { fatalError(usage) }
        return numbers
    }

    /// The text after `name` (`--compare-gateway gateway-before`), or `nil` when `name` is not given.
    package static func string(_ name: String) -> String? {
        value(after: name, else: "\(name) takes a value")
    }

    /// What follows `name` on the command line; `nil` without `name`. Stops with `usage` when
    /// `name` is last or followed by another option.
    private static func value(after name: String, else usage: String) -> String? {
        let arguments = CommandLine.arguments
        guard let index = arguments.firstIndex(of: name) else { return nil }
        guard index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") else { fatalError(usage) }
        return arguments[index + 1]
    }
}
