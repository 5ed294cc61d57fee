import CVips
import Contracts
import Foundation
import Testing

@testable import Imaging

/// The property every filter of Services/EditRender/README.md promises, checked on every pixel of a real photo.
@Suite("Filter properties") struct FilterPropertyTests {
    let photo = "LadyBird"

    func original() throws -> Pixels { try filtered(photo, []) }

    @Test func sepiaLeavesRedAtLeastGreenAtLeastBlueOnEveryPixel() throws {
        let image = try filtered(photo, [FilterStep(name: "sepia")])
        for index in 0..<image.count {
            let p = image.pixel(index)
            #expect(p[0] >= p[1] && p[1] >= p[2], "pixel \(index): \(p)")
            if p[0] < p[1] || p[1] < p[2] { return }
        }
        // At intensity 0 it is the identity.
        #expect(try filtered(photo, [FilterStep(name: "sepia", parameters: ["intensity": 0])]).difference(from: original()).max <= 1)
    }

    @Test(arguments: ["noir", "mono", "tonal"])
    func blackAndWhiteEffectsMakeEveryPixelGrey(_ name: String) throws {
        let image = try filtered(photo, [FilterStep(name: name)])
        #expect((0..<image.count).allSatisfy { Set(image.pixel($0)).count == 1 })
    }

    @Test func tonalIsLumaAndMonoCompressesItAndNoirStretchesIt() throws {
        let (tonal, mono, noir) = (
            try filtered(photo, [FilterStep(name: "tonal")]), try filtered(photo, [FilterStep(name: "mono")]),
            try filtered(photo, [FilterStep(name: "noir")])
        )
        let source = try original()
        for index in stride(from: 0, to: source.count, by: 97) {
            let c = source.pixel(index).map(Double.init)
            let y = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
            #expect(abs(Double(tonal.pixel(index)[0]) - y) <= 1)
            #expect(abs(Double(mono.pixel(index)[0]) - (0.08 * 255 + 0.84 * y)) <= 1)
            #expect(abs(Double(noir.pixel(index)[0]) - ToneCurve.noir.value(at: y / 255) * 255) <= 1.5)
        }
        // Mono stays within its lifted blacks and lowered whites.
        #expect(mono.data.min()! >= 19 && mono.data.max()! <= 236)
    }

    @Test func invertTwiceGivesTheInputBack() throws {
        let twice = try filtered(photo, [FilterStep(name: "invert"), FilterStep(name: "invert")])
        #expect(twice.difference(from: try original()).max <= 1)
        let once = try filtered(photo, [FilterStep(name: "invert")])
        let source = try original()
        #expect((0..<source.count).allSatisfy { index in zip(once.pixel(index), source.pixel(index)).allSatisfy { abs($0 + $1 - 255) <= 1 } })
    }

    @Test func exposurePlusOneDoublesLinearLight() throws {
        let source = try original()
        let brighter = try filtered(photo, [FilterStep(name: "exposure", parameters: ["ev": 1])])
        var (before, after) = (0.0, 0.0)
        for index in 0..<source.data.count {
            let linear = SRGB.decode(Double(source.data[index]) / 255)
            // Values that doubling would clip at white say nothing about the gain.
            guard linear < 0.45, linear > 0.02 else { continue }
            before += linear
            after += SRGB.decode(Double(brighter.data[index]) / 255)
        }
        #expect(abs(after / before - 2) < 0.04, "ratio \(after / before)")
        #expect(abs(after / before - 2) / 2 < 0.02)
    }

    @Test func colorControlsAndHueAtTheirDefaultsChangeNothing() throws {
        let source = try original()
        #expect(try filtered(photo, [FilterStep(name: "colorControls")]).difference(from: source).max <= 1)
        #expect(try filtered(photo, [FilterStep(name: "hue", parameters: ["angle": 0])]).difference(from: source).max <= 1)
        #expect(try filtered(photo, [FilterStep(name: "temperature")]).difference(from: source).max <= 1)
        #expect(try filtered(photo, [FilterStep(name: "vibrance")]).difference(from: source).max <= 1)
        #expect(try filtered(photo, [FilterStep(name: "exposure")]).difference(from: source).max <= 1)
    }

    @Test func colorControlsBrightnessShiftsAndSaturationZeroIsGrey() throws {
        let source = try original()
        let brighter = try filtered(photo, [FilterStep(name: "colorControls", parameters: ["brightness": 0.1])])
        for index in 0..<source.data.count where source.data[index] < 220 {
            #expect(abs(Int(brighter.data[index]) - Int(source.data[index]) - 26) <= 1)
        }
        let grey = try filtered(photo, [FilterStep(name: "colorControls", parameters: ["saturation": 0])])
        #expect((0..<grey.count).allSatisfy { Set(grey.pixel($0)).count == 1 })
        let flat = try filtered(photo, [FilterStep(name: "colorControls", parameters: ["contrast": 0])])
        #expect(Set(flat.data) == [128])
    }

    @Test func chromeAddsColourAndFadeTakesItAwayAndLiftsBlacks() throws {
        let source = try original()
        let chrome = try filtered(photo, [FilterStep(name: "chrome")])
        let fade = try filtered(photo, [FilterStep(name: "fade")])
        #expect(chrome.meanChroma > source.meanChroma * 1.15)
        #expect(fade.meanChroma < source.meanChroma * 0.7)
        #expect(fade.data.min()! >= 30 && fade.data.max()! <= 236)
    }

    @Test func instantWarmsAndFloorsProcessCoolsTransferWarms() throws {
        let source = try original().means
        let instant = try filtered(photo, [FilterStep(name: "instant")])
        #expect(instant.data.min()! >= 12)
        #expect(instant.means[0] / instant.means[2] > source[0] / source[2])
        let process = try filtered(photo, [FilterStep(name: "process")]).means
        #expect(process[2] / process[0] > source[2] / source[0])
        let transfer = try filtered(photo, [FilterStep(name: "transfer")]).means
        #expect(transfer[0] / transfer[2] > source[0] / source[2])
    }

    @Test func vibranceSaturatesDullColoursAndLeavesGreysAlone() throws {
        let source = try original()
        let vivid = try filtered(photo, [FilterStep(name: "vibrance", parameters: ["amount": 1])])
        #expect(vivid.meanChroma > source.meanChroma * 1.05)
        let duller = try filtered(photo, [FilterStep(name: "vibrance", parameters: ["amount": -1])])
        #expect(duller.meanChroma < source.meanChroma)
        for index in 0..<source.count where Set(source.pixel(index)).count == 1 {
            #expect(vivid.pixel(index) == source.pixel(index))
        }
    }

    @Test func hueRotationKeepsGreysAndTurnsColours() throws {
        let matrix = FilterChain.hueRotation(2.1)
        for grey in [0.0, 0.3, 0.8] {
            let out = matrix.apply([grey, grey, grey])
            #expect(out.allSatisfy { abs($0 - grey) < 1e-3 })
        }
        let source = try original()
        let rotated = try filtered(photo, [FilterStep(name: "hue", parameters: ["angle": 2.1])])
        #expect(rotated.difference(from: source).mean > 10)
    }

    @Test func lowerTemperatureWarmsAndTintShiftsGreen() throws {
        let source = try original().means
        let warm = try filtered(photo, [FilterStep(name: "temperature", parameters: ["temperature": 3500])]).means
        #expect(warm[2] < source[2] * 0.8)
        #expect(abs(warm[0] - source[0]) <= 1)
        let magenta = try filtered(photo, [FilterStep(name: "temperature", parameters: ["tint": 100])]).means
        #expect(abs(magenta[1] - source[1] * 0.8) <= 2)
    }

    @Test func vignetteDarkensCornersAndSparesTheCentre() throws {
        let source = try original()
        let image = try filtered(photo, [FilterStep(name: "vignette", parameters: ["intensity": 1, "radius": 1])])
        let centre = (x: source.width / 2, y: source.height / 2)
        #expect(zip(image.pixel(x: centre.x, y: centre.y), source.pixel(x: centre.x, y: centre.y)).allSatisfy { abs($0 - $1) <= 1 })
        // At the corner d ≈ 1: factor 1 − 1·smoothstep(0.4, 1, 1) = 0.
        #expect(image.pixel(x: 0, y: 0).allSatisfy { $0 <= 3 })
        // Halfway out (d ≈ 0.7): the factor is 1 − smoothstep(0.4, 1, d) at that pixel's centre.
        let x = centre.x + Int(0.7 * Double(source.width) / 2)
        let y = centre.y + Int(0.7 * Double(source.height) / 2)
        let dx = Double(x) + 0.5 - Double(source.width) / 2
        let dy = Double(y) + 0.5 - Double(source.height) / 2
        let d = ((dx * dx + dy * dy) / ((Double(source.width * source.width) + Double(source.height * source.height)) / 4)).squareRoot()
        let t = (d - 0.4) / 0.6
        let factor = 1 - t * t * (3 - 2 * t)
        #expect(abs(factor - 0.5) < 0.05)
        for (out, input) in zip(image.pixel(x: x, y: y), source.pixel(x: x, y: y)) {
            #expect(abs(Double(out) - Double(input) * factor) <= 1)
        }
    }

    @Test func gaussianBlurRemovesDetailAndKeepsTheMean() throws {
        // Radii are pixels at 1080 wide: judged at that width.
        let source = try filtered(photo, edge: 1080, [])
        let blurred = try filtered(photo, edge: 1080, [FilterStep(name: "gaussianBlur", parameters: ["radius": 8])])
        #expect(blurred.detail < source.detail * 0.5)
        for (after, before) in zip(blurred.means, source.means) { #expect(abs(after - before) < before * 0.02) }
        #expect(try filtered(photo, edge: 1080, [FilterStep(name: "gaussianBlur", parameters: ["radius": 0])]).difference(from: source).max <= 1)
    }

    @Test func sharpenAddsDetailToLuminanceOnly() throws {
        let source = try filtered(photo, edge: 1080, [])
        let sharpened = try filtered(photo, edge: 1080, [FilterStep(name: "sharpen", parameters: ["sharpness": 1.5, "radius": 4])])
        #expect(sharpened.detail > source.detail * 1.2)
        for (after, before) in zip(sharpened.means, source.means) { #expect(abs(after - before) < 3) }
        // Luminance only: a grey photo stays grey.
        let grey = try filtered(photo, [FilterStep(name: "tonal"), FilterStep(name: "sharpen", parameters: ["sharpness": 1.5, "radius": 4])])
        #expect(
            (0..<grey.count).allSatisfy { index in
                let p = grey.pixel(index)
                return p.max()! - p.min()! <= 2
            }
        )
    }

    @Test func pixelRadiiScaleWithTheOutputWidth() throws {
        // A 400-pixel preview blurs by the same fraction of the picture as the 1080 render.
        let small = try filtered(photo, edge: 400, [FilterStep(name: "gaussianBlur", parameters: ["radius": 20])])
        let large = try filtered(photo, edge: 1080, [FilterStep(name: "gaussianBlur", parameters: ["radius": 20])])
        let reduced = try pixels(
            of: VImage.fromPixels(large.data, width: large.width, height: large.height, bands: 3).map {
                splash_vips_thumbnail_image($0, $1, Int32(400))
            }
        )
        #expect(reduced.difference(from: small).mean < 2.5)
    }
}
