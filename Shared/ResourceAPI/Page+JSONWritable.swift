import Contracts

extension Page: JSONWritable where Item: JSONWritable {
    package func write(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("items")
            writer.array(items) { writer, item in item.write(to: &writer) }
            writer.key("nextCursor")
            writer.string(nextCursor)
        }
    }
}
