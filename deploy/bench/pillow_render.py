#!/usr/bin/env python3
"""Pillow baseline for `make bench-render`: the same render as edit-render's benchmark case.

A photo shrunk to fit 1080 px (JPEG draft mode, the shrink-on-load Pillow has), `sepia` as
Services/EditRender/README.md defines it (a 3x3 colour matrix), `vignette` (intensity 0.6, radius 1:
c * (1 - i * smoothstep(0.4 r, r, d)) with the mask computed per image, as edit-render does), then
JPEG within 1 MB by the same rule (quality 92 if it fits, else bisection over 40..92).

Prints one JSON line: images per second over `--processes` worker processes, and the latency
percentiles of single renders in one process.
"""
import argparse
import io
import json
import multiprocessing
import time

import numpy
from PIL import Image

SEPIA = (0.3588, 0.7044, 0.1368, 0,
         0.2990, 0.5870, 0.1140, 0,
         0.2392, 0.4696, 0.0912, 0)
TARGET = 1 << 20


def vignette_mask(width, height, intensity=0.6, radius=1.0):
    ys, xs = numpy.mgrid[0:height, 0:width].astype(numpy.float32)
    dx, dy = xs + 0.5 - width / 2, ys + 0.5 - height / 2
    d = numpy.sqrt((dx * dx + dy * dy) / ((width * width + height * height) / 4))
    t = numpy.clip((d - 0.4 * radius) / (radius - 0.4 * radius), 0, 1)
    return 1 - intensity * t * t * (3 - 2 * t)


def encode(image, quality):
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def render(source):
    image = Image.open(io.BytesIO(source))
    image.draft("RGB", (1080, 1080))
    image = image.convert("RGB")
    image.thumbnail((1080, 1080), Image.Resampling.LANCZOS)
    image = image.convert("RGB", SEPIA)
    pixels = numpy.asarray(image, dtype=numpy.float32)
    pixels *= vignette_mask(image.width, image.height)[:, :, None]
    image = Image.fromarray(numpy.clip(pixels + 0.5, 0, 255).astype(numpy.uint8))
    best = encode(image, 92)
    if len(best) > TARGET:
        low, high, best = 40, 91, encode(image, 40)
        while low <= high:
            middle = (low + high) // 2
            data = encode(image, middle)
            if len(data) <= TARGET:
                best, low = data, middle + 1
            else:
                high = middle - 1
    return best


def worker(arguments):
    path, seconds = arguments
    source = open(path, "rb").read()
    count, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        render(source)
        count += 1
    return count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--photo", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--processes", type=int, default=multiprocessing.cpu_count())
    parser.add_argument("--samples", type=int, default=40)
    options = parser.parse_args()

    source = open(options.photo, "rb").read()
    render(source)
    latencies = []
    for _ in range(options.samples):
        started = time.perf_counter()
        render(source)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()

    started = time.monotonic()
    with multiprocessing.Pool(options.processes) as pool:
        counts = pool.map(worker, [(options.photo, options.seconds)] * options.processes)
    elapsed = time.monotonic() - started
    print(json.dumps({
        "images_per_second": sum(counts) / elapsed,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "bytes": len(render(source)),
        "pillow": Image.__version__,
    }))


if __name__ == "__main__":
    main()
