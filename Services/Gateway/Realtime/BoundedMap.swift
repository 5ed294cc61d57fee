/// Values by key, at most `capacity` of them: past it, the key first recorded longest ago is
/// forgotten (recording a key again keeps its place). Kept inside its owner's lock; recording is
/// amortised O(1) (the forgotten head of the arrivals is removed in bulk).
struct BoundedMap<Key: Hashable, Value> {
    private var values: [Key: Value] = [:]
    /// Keys in the order they were first recorded; `head` is the oldest still held.
    private var arrivals: [Key] = []
    private var head = 0
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "a map of no keys forgets everything")
        self.capacity = capacity
    }

    subscript(key: Key) -> Value? { values[key] }

    /// Records `value` under `key`; whether `key` was not held already.
    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: Key) -> Bool {
        guard values.updateValue(value, forKey: key) == nil else { return false }
        arrivals.append(key)
        if values.count > capacity {
            values[arrivals[head]] = nil
            head += 1
        }
        if head > capacity {
            arrivals.removeFirst(head)
            head = 0
        }
        return true
    }
}
