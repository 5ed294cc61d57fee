/// The recent events a resuming client may ask for: at most `capacity`, none older than `age`,
/// oldest first. Kept inside a hub's locked state; appending is amortised O(1) (the dropped
/// head is removed in bulk once it is most of the storage).
struct ReplayWindow<Element> {
    private var items: [(element: Element, receivedAt: ContinuousClock.Instant)] = []
    private var head = 0
    let capacity: Int
    let age: Duration

    init(capacity: Int, age: Duration) {
        self.capacity = capacity
        self.age = age
    }

    /// Adds `element`, dropping what is now beyond the capacity or too old.
    mutating func append(_ element: Element, receivedAt: ContinuousClock.Instant) {
        items.append((element, receivedAt))
        let now = ContinuousClock.now
        while items.count - head > capacity || (head < items.count && now - items[head].receivedAt > age) {
            head += 1
        }
        if head > 1_024, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
    }

    /// The elements after the last one matching `isLast`, oldest first; nil when none in the
    /// window matches (it has left the window, or never was in it).
    func elements(after isLast: (Element) -> Bool) -> ArraySlice<(element: Element, receivedAt: ContinuousClock.Instant)>? {
        guard let index = items[head...].lastIndex(where: { isLast($0.element) }) else { return nil }
        return items[(index + 1)...]
    }
}
