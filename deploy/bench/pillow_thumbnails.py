#!/usr/bin/env python3
"""Pillow baseline for `make bench-thumbnails`: a 1080-px JPEG → a 200×200 WebP tile, Pillow's best
way — JPEG draft mode (decoding at 1/2, 1/4 or 1/8 of the size), the centre square cut, then
`thumbnail()` to 200×200 and WebP at quality 80 — over every file of a folder, one process per
core.

Prints one JSON line: files, seconds, files per second, Pillow's version.
"""
import argparse
import io
import json
import multiprocessing
import os
import time

import PIL
from PIL import Image


def tile(path):
    image = Image.open(path)
    image.draft("RGB", (200, 200))
    image = image.convert("RGB")
    side = min(image.size)
    left, top = (image.width - side) // 2, (image.height - side) // 2
    image = image.crop((left, top, left + side, top + side))
    image.thumbnail((200, 200), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, "WEBP", quality=80)
    return len(buffer.getvalue())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", required=True)
    parser.add_argument("--processes", type=int, default=os.cpu_count())
    arguments = parser.parse_args()
    files = sorted(os.path.join(arguments.folder, name) for name in os.listdir(arguments.folder) if name.endswith(".jpg"))
    with multiprocessing.Pool(arguments.processes) as pool:
        pool.map(tile, files[:arguments.processes])  # the workers started and warm
        started = time.perf_counter()
        sizes = pool.map(tile, files, chunksize=4)
        elapsed = time.perf_counter() - started
    print(json.dumps({"files": len(files), "seconds": elapsed, "files_per_second": len(files) / elapsed,
                      "bytes": sum(sizes), "pillow": PIL.__version__}))


if __name__ == "__main__":
    main()
