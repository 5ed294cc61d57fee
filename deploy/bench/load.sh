#!/usr/bin/env bash
# make bench-load: the stack in release builds under `splash up` (the tracking simulator
# included), k6's mixed workload through its gateway (deploy/bench/k6/mixed.js) for LOAD_DURATION
# at LOAD_SCALE, then the report (deploy/bench/k6/report.py) in deploy/bench/results: load.md,
# load.png and the k6 summary, load.json. The stack's log is kept in .build/load/stack.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=.build/load
mkdir -p "$work"
ports=(8080 8081 8082 8083 8084 8085)
for port in "${ports[@]}"; do
  if curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; then
    echo "port $port answers already: stop the running stack first" >&2
    exit 1
  fi
done

# The stack keeps its state in a folder of its own, so the run starts empty and leaves .data alone.
# Every call comes from one address here, where the apps' come from many: the per-address rate
# limits (the gateway's for anonymous calls, auth's for sign-ins and sign-ups) are lifted, and
# the per-user ones too, since 20 people make all the load.
rm -rf "$work/data"
for group in AUTH PHOTO_CATALOG EDIT_RENDER MEDIA SOCIAL STORAGE TRACKING DATA_AUTH DATA_SOCIAL DATA_TRACKING REALTIME; do
  export "GATEWAY_RATE_LIMIT_$group=1000000/1m"
done
export AUTH_RATE_LIMIT_TOKEN=1000000/1m AUTH_RATE_LIMIT_SIGNUP=1000000/1m
.build/release/splash up --exit-with-parent $$ --data-dir "$work/data" >"$work/stack.log" 2>&1 &
stack=$!
trap 'kill $stack 2>/dev/null; wait $stack 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do
  ready=0
  for port in "${ports[@]}"; do
    curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && ready=$((ready + 1))
  done
  [ "$ready" -eq "${#ports[@]}" ] && break
  kill -0 $stack 2>/dev/null || { echo "splash up stopped; its log:" >&2; tail -40 "$work/stack.log" >&2; exit 1; }
  sleep 1
done
[ "$ready" -eq "${#ports[@]}" ] || { echo "the stack was not ready in 180 s; its log: $work/stack.log" >&2; exit 1; }

mkdir -p deploy/bench/results
status=0
k6 run --quiet --env GATEWAY=http://127.0.0.1:8080 --env DURATION="${LOAD_DURATION:-60s}" --env SCALE="${LOAD_SCALE:-1}" \
  --env RESULTS=deploy/bench/results/load.json deploy/bench/k6/mixed.js || status=$?
python3 deploy/bench/k6/report.py deploy/bench/results/load.json deploy/bench/results
exit $status
