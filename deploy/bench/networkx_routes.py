#!/usr/bin/env python3
"""The baseline of `make bench-routing`: networkx's astar_path over the same road graph.

Reads the road fixture and a JSON list of [source, target] node pairs, builds a networkx DiGraph
with each directed edge's time (length at its speed limit; the fastest of parallel edges), and
times astar_path with the same bound as Splash (straight-line distance at the top speed) for each
pair, several rounds. Prints JSON: each route's time in seconds of driving (for the cross-check)
and the microseconds each search took.
"""
import argparse
import json
import math
import time

import networkx as nx


def haversine(a, b):
    lat1, lng1, lat2, lng2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * 6371008.8 * math.asin(min(1, math.sqrt(h)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph", required=True)
    parser.add_argument("--pairs", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    fixture = json.load(open(args.graph))
    nodes = fixture["nodes"]
    graph = nx.DiGraph()
    top = 0.0
    for source, target, metres, kmh, oneway in fixture["edges"]:
        speed = kmh / 3.6
        top = max(top, speed)
        for a, b in ([(source, target)] if oneway else [(source, target), (target, source)]):
            seconds = metres / speed
            if not graph.has_edge(a, b) or graph[a][b]["seconds"] > seconds:
                graph.add_edge(a, b, seconds=seconds)
    pairs = json.load(open(args.pairs))

    def bound(a, b):
        return haversine(nodes[a], nodes[b]) / top

    times = []
    for a, b in pairs:
        path = nx.astar_path(graph, a, b, heuristic=bound, weight="seconds")
        times.append(sum(graph[x][y]["seconds"] for x, y in zip(path, path[1:])))
    microseconds = []
    for _ in range(args.rounds):
        for a, b in pairs:
            start = time.perf_counter_ns()
            nx.astar_path(graph, a, b, heuristic=bound, weight="seconds")
            microseconds.append((time.perf_counter_ns() - start) / 1000)
    print(json.dumps({"networkx": nx.__version__, "seconds": times, "microseconds": microseconds}))


if __name__ == "__main__":
    main()
