#!/usr/bin/env bash
# The gateway's own CPU per proxied call, two builds side by side: each gateway (one event loop)
# proxies `/auth/v1/user` to nginx, which answers it from a file, so nearly all the work measured
# is the proxy's (GatewayBenchmark's calls reach auth and Postgres, whose cost and noise dwarf it).
# nginx as a plain reverse proxy (one worker, keep-alive upstream connections, the forwarding
# headers GatewayBenchmark's nginx sets) is the third way, the baseline. wrk runs against each in
# turn, round after round; the CPU each proxy process spent (from /proc) over the calls it carried
# is printed per round.
#
#   deploy/bench/gateway-ab.sh .build/release/gateway .build/release/gateway-before [get|put] [connections] [seconds] [rounds]
#
# Pass the same build twice to set one build against nginx alone.
#
# Needs nginx and wrk (Debian's). `put` sends a 0.5 KiB body with each call.
set -euo pipefail
first=$1 second=$2 call=${3:-get} connections=${4:-8} seconds=${5:-8} rounds=${6:-5}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    nginx -p "$work" -c nginx.conf -s stop 2>/dev/null || true
    nginx -p "$work/proxy" -c nginx.conf -s stop 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
upstream=$(free_port)
mkdir -p "$work/logs"
printf '{"id":"0b6f7d5e-2c1a-4c7e-9d2f-3f4a5b6c7d8e","email":"someone@example.com","role":"authenticated"}' > "$work/user.json"
printf '{"keys":[]}' > "$work/jwks.json"
cat > "$work/nginx.conf" <<NGINX
worker_processes 1;
error_log $work/logs/error.log;
pid $work/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$upstream;
        keepalive_requests 100000000;
        location = /auth/v1/user { default_type application/json; alias $work/user.json; error_page 405 =200 \$uri; }
        location = /auth/v1/.well-known/jwks.json { default_type application/json; alias $work/jwks.json; }
    }
}
NGINX
nginx -p "$work" -c nginx.conf
proxy_port=$(free_port)
mkdir -p "$work/proxy/logs"
cat > "$work/proxy/nginx.conf" <<NGINX
worker_processes 1;
error_log $work/proxy/logs/error.log;
pid $work/proxy/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    upstream upstream { server 127.0.0.1:$upstream; keepalive 64; }
    server {
        listen 127.0.0.1:$proxy_port;
        keepalive_requests 100000000;
        location / {
            proxy_pass http://upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
        }
    }
}
NGINX
nginx -p "$work/proxy" -c nginx.conf
for _ in $(seq 1 50); do [ -s "$work/proxy/nginx.pid" ] && pgrep -P "$(cat "$work/proxy/nginx.pid")" >/dev/null && break; sleep 0.1; done
proxy_worker=$(pgrep -P "$(cat "$work/proxy/nginx.pid")")
script=()
if [ "$call" = put ]; then
    printf 'wrk.method = "PUT"; wrk.body = string.rep("x", 512); wrk.headers["Content-Type"] = "application/json"' > "$work/put.lua"
    script=(-s "$work/put.lua")
fi
ports=()
for gateway in "$first" "$second"; do
    port=$(free_port)
    HTTP_PORT=$port GATEWAY_AUTH_URL=http://127.0.0.1:$upstream KAFKA_BROKERS=127.0.0.1:1 EVENT_LOOPS=1 LOG_LEVEL=error \
        GATEWAY_RATE_LIMIT_AUTH=100000000/1m "$gateway" >"$work/$port.log" 2>&1 &
    pids+=($!)
    ports+=("$port")
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/auth/v1/user" && break; sleep 0.2; done
done
pids+=("$proxy_worker")
ports+=("$proxy_port")
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)
echo "$call, $connections connections, ${seconds} s per run: CPU per call (µs), $(basename "$first") / $(basename "$second") / nginx"
for round in $(seq 1 "$rounds"); do
    line="round $round:"
    for index in 0 1 2; do
        pid=${pids[$index]} port=${ports[$index]}
        wrk -t1 -c"$connections" -d2s "${script[@]}" "http://127.0.0.1:$port/auth/v1/user" >/dev/null  # warm-up
        before=$(cpu_ticks "$pid")
        calls=$(wrk -t1 -c"$connections" -d"${seconds}s" "${script[@]}" "http://127.0.0.1:$port/auth/v1/user" | awk '/requests in/ {print $1}')
        after=$(cpu_ticks "$pid")
        line+=" $(python3 -c "print(f'{($after - $before) / $ticks_per_second * 1e6 / $calls:.1f}')") ($calls calls)"
        [ "$index" -lt 2 ] && line+=" /"
    done
    echo "$line"
done
