import Foundation

/// The benchmarks' command-line options: `--name value` pairs.
package enum BenchmarkArguments {
    /// The whole number after `name` (`--seconds 10`), or `value` when `name` is not given.
    package static func integer(_ name: String, default value: Int) -> Int {
        let arguments = CommandLine.arguments
        guard let index = arguments.firstIndex(of: name) else { return value }
        guard index + 1 < arguments.count, let number = Int(arguments[index + 1]) else {
            fatalError("\(name) takes a whole number")
        }
        return number
    }

    /// The comma-separated whole numbers after `name` (`--loads 32,4,1`), or `value`.
    package static func integers(_ name: String, default value: [Int]) -> [Int] {
        let arguments = CommandLine.arguments
        guard let index = arguments.firstIndex(of: name) else { return value }
        guard index + 1 < arguments.count else { fatalError("\(name) takes whole numbers separated by commas") }
        let numbers = arguments[index + 1].split(separator: ",").compactMap { Int($0) }
        guard !numbers.isEmpty else { fatalError("\(name) takes whole numbers separated by commas") }
        return numbers
    }

    /// The text after `name` (`--compare-gateway gateway-before`), or `nil` when `name` is not given.
    package static func string(_ name: String) -> String? {
        let arguments = CommandLine.arguments
        guard let index = arguments.firstIndex(of: name) else { return nil }
        guard index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") else { fatalError("\(name) takes a value") }
        return arguments[index + 1]
    }
}
