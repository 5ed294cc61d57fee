import Foundation

/// The 5640×3172, 16 MB progressive JPEG painting of Debian's `mate-backgrounds` (see
/// Tests/ImagingTests/Fixtures/photos/SOURCE.md; `make test` installs the package): the largest
/// source the render is checked and measured with.
package enum LargePainting {
    package static let url = URL(fileURLWithPath: "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg")
}
