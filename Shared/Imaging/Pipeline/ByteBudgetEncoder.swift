import CVips
import Contracts

/// Encodes an in-memory image at the highest quality whose file fits the target, found by
/// bisection over the quality range (about six encodes at most, one when the top quality fits);
/// if the lowest quality is still over the cap, the image shrinks by 10 % and the search repeats.
enum ByteBudgetEncoder {
    static func encode(_ image: VImage, rules: OutputRules) throws(VipsFailure) -> RenderedImage {
        var image = image
        var encodes = 0
        while true {
            var best: (quality: Int, bytes: [UInt8])?
            func attempt(_ quality: Int) throws(VipsFailure) -> [UInt8] {
                encodes += 1
                let bytes = try save(image, format: rules.format, quality: quality)
                if bytes.count <= rules.targetBytes, quality > (best?.quality ?? Int.min) { best = (quality, bytes) }
                return bytes
            }
            // Most photos at the output size fit at the top quality: one encode.
            if try attempt(rules.qualities.upperBound).count > rules.targetBytes {
                var (low, high) = (rules.qualities.lowerBound, rules.qualities.upperBound - 1)
                var lowest: [UInt8]?
                while low <= high {
                    let middle = (low + high) / 2
                    let bytes = try attempt(middle)
                    if middle == rules.qualities.lowerBound { lowest = bytes }
                    if bytes.count <= rules.targetBytes { low = middle + 1 } else { high = middle - 1 }
                }
                if best == nil {
                    let floor = if let lowest { lowest } else { try attempt(rules.qualities.lowerBound) }
                    if floor.count <= rules.capBytes { best = (rules.qualities.lowerBound, floor) }
                }
            }
            if let best {
                return RenderedImage(
                    bytes: best.bytes,
                    format: rules.format,
                    width: image.width,
                    height: image.height,
                    quality: best.quality,
                    encodes: encodes
                )
            }
            // Over the cap even at the lowest quality: 10 % smaller, and again.
            let edge = Int(Double(max(image.width, image.height)) * 0.9)
            guard edge >= 16 else { throw VipsFailure(message: "the image cannot be encoded within \(rules.capBytes) bytes") }
            image = try image.map { splash_vips_thumbnail_image($0, $1, Int32(edge)) }.materialized()
        }
    }

    static func save(_ image: VImage, format: EditOutput.Format, quality: Int) throws(VipsFailure) -> [UInt8] {
        switch format {
        case .jpeg: try image.jpegEncoded(quality: quality)
        case .webp: try image.webpEncoded(quality: quality)
        }
    }
}
