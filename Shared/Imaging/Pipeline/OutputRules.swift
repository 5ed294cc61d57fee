import Contracts

/// How a render's file is made (Services/EditRender/README.md: "Output" and the pipeline): its format and longest edge, and the
/// byte budget the encoder's quality is bisected against.
package struct OutputRules: Sendable, Equatable {
    package var format: EditOutput.Format
    /// Never enlarged past the source.
    package var longestEdge: Int
    /// The highest quality whose file fits this many bytes is chosen.
    package var targetBytes: Int
    /// When even the lowest quality is over this, the image shrinks by 10 % steps.
    package var capBytes: Int
    package var qualities: ClosedRange<Int>

    package static let maxLongestEdge = 2048

    package init(
        format: EditOutput.Format = .jpeg,
        longestEdge: Int = 1080,
        targetBytes: Int = 1 << 20,
        capBytes: Int = 2 << 20,
        qualities: ClosedRange<Int> = 40...92
    ) {
        self.format = format
        self.longestEdge = longestEdge
        self.targetBytes = targetBytes
        self.capBytes = capBytes
        self.qualities = qualities
    }

    /// A live preview: at most 400 px, JPEG.
    package static func preview(longestEdge: Int = 400) -> OutputRules {
        OutputRules(format: .jpeg, longestEdge: min(longestEdge, 400))
    }
}

/// A rendered file.
package struct RenderedImage: Sendable, Equatable {
    package var bytes: [UInt8]
    package var format: EditOutput.Format
    package var width: Int
    package var height: Int
    /// The encoder quality the byte budget allowed.
    package var quality: Int
    /// How many encodes the bisection took (for the metrics and the benchmark).
    package var encodes: Int

    package var mediaType: String { format == .jpeg ? "image/jpeg" : "image/webp" }
}
