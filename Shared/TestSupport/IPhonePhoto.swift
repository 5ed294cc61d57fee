import Foundation

/// Photos as an iPhone's library hands them over (HEIC, AVIF), made by pillow-heif for a test.
package enum IPhonePhoto {
    /// A 640×480 picture, red on the left half and blue on the right, with an EXIF orientation of
    /// 6 and a GPS position, saved by pillow-heif as `format` (`heic` or `avif`). pillow-heif does
    /// what an iPhone does: the orientation becomes the container's rotation (`irot`), so the
    /// photo is seen upright as a 480×640 portrait, red on top.
    package static func made(_ format: String) throws -> [UInt8] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("iphone-\(UUID().uuidString).\(format)")
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import sys, pillow_heif
            from PIL import Image
            pillow_heif.register_heif_opener()
            image = Image.new("RGB", (640, 480), (220, 20, 20))
            image.paste((20, 20, 220), (320, 0, 640, 480))
            exif = Image.Exif()
            exif[0x0112] = 6
            exif[0x8825] = {2: (60.0, 10.0, 0.0)}
            image.save(sys.argv[1], quality=90, exif=exif.tobytes())
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, file.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw MadeNothing(format: format) }
        return Array(try Data(contentsOf: file))
    }

    struct MadeNothing: Error, CustomStringConvertible {
        var format: String
        var description: String { "pillow-heif could not write a \(format) file (make deps installs it)" }
    }
}
