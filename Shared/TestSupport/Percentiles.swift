/// Percentiles of a benchmark's samples, by the nearest rank of the sorted samples (the median of
/// two is the upper one); NaN for none.
package enum Percentiles {
    /// The `fraction` (0…1) percentile of `values`, in any order.
    package static func value(_ fraction: Double, of values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
    }
}
