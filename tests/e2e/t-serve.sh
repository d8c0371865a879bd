#!/usr/bin/env bash
# End-to-end tests of `gpuwho serve`: the real binary on a free port with the fake libnvidia-ml and
# stand-in /dev/nvidia* nodes, driven with curl, raw sockets (malformed HTTP) and
# tests/helpers/httpflood (1,000 concurrent scrapes).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"

need_curl() { command -v curl >/dev/null || skip "no curl"; }

# start_serve ARGS...: gpuwho serve on a free port ($PORT) with the stand-ins; $SPID is its pid,
# $URL its base URL; waits for /healthz.
start_serve() {
	PORT=$(free_port)
	URL="http://127.0.0.1:$PORT"
	GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" spawn "$GPUWHO" serve --nvml "$FAKE" \
		--listen "127.0.0.1:$PORT" "$@" 2>"$TMP/serve.err"
	SPID=$!
	wait_http "$URL/healthz"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# raw TEXT: sends TEXT (printf format) on one connection and prints the status line of the answer
# (or nothing when the server closed the connection without one).
raw() {
	exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
	# The server may answer (414, 413) and close while a long request is still being written: the
	# write must fail with EPIPE, not end the test with SIGPIPE.
	# shellcheck disable=SC2059
	( trap '' PIPE; printf "$1" >&3 ) 2>/dev/null
	timeout 5 head -n 1 <&3 2>/dev/null | tr -d '\r'
	exec 3<&- 3>&-
}

test_serve_answers_metrics_and_healthz_and_refuses_the_rest() {
	need_curl
	mkdevs
	scenario "gpu 0 used_mib=1000" "gpu 1 used_mib=4096"
	start_serve
	out=$(curl -sf -D "$TMP/headers" "$URL/metrics") || fail "GET /metrics"
	expect_has "$out" 'gpuwho_gpu_memory_unattributed_bytes{gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001"} 4294967296'
	expect_has "$(cat "$TMP/headers")" "Content-Type: text/plain; version=0.0.4; charset=utf-8"
	if command -v promtool >/dev/null; then
		promtool check metrics <<<"$out" >/dev/null 2>&1 || fail "promtool check metrics on /metrics"
	fi
	[ "$(curl -s "$URL/healthz")" = ok ] || fail "/healthz"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/nope")" = 404 ] || fail "/nope is not 404"
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "$URL/metrics")" = 405 ] || fail "POST is not 405"
	[ "$(curl -s -o /dev/null -w '%{http_code}' -I "$URL/metrics")" = 200 ] || fail "HEAD is not 200"
	expect_has "$(cat "$TMP/serve.err")" "listening on http://127.0.0.1:$PORT/metrics"
}

test_serve_listens_on_the_loopback_unless_asked() {
	need_curl
	mkdevs
	scenario "gpu 0" "gpu 1"
	grep -qi ':266B 00000000:0000 0A' /proc/net/tcp /proc/net/tcp6 && skip "port 9835 is taken on this host; the default cannot be tried"
	GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" spawn "$GPUWHO" serve --nvml "$FAKE" 2>"$TMP/serve.err"
	wait_http "http://127.0.0.1:9835/healthz"
	# /proc/net/tcp: 0100007F:266B is 127.0.0.1:9835; nothing on 00000000 (every address).
	grep -qi ' 0100007F:266B 00000000:0000 0A' /proc/net/tcp || fail "not listening on 127.0.0.1:9835"
	! grep -qi ' 00000000:266B 00000000:0000 0A' /proc/net/tcp || fail "listening on every address"
}

test_bad_listen_addresses_are_refused() {
	mkdevs
	scenario "gpu 0"
	for a in ":9835" "127.0.0.1:0" "127.0.0.1:70000" "::1:9835" "[::1]" "x"; do
		gw serve --nvml "$FAKE" --listen "$a" 2>"$TMP/err" & p=$!
		( sleep 5; kill -9 $p 2>/dev/null ) & w=$!
		wait $p; rc=$?
		kill $w 2>/dev/null
		[ "$rc" -eq 2 ] || fail "--listen '$a': exit $rc, expected 2"
	done
	expect_has "$(cat "$TMP/err")" "--listen wants ADDR:PORT"
	# A port that is taken: exit 3, with the reason.
	start_serve
	gw serve --nvml "$FAKE" --listen "127.0.0.1:$PORT" 2>"$TMP/err2"; rc=$?
	[ "$rc" -eq 3 ] || fail "a taken port: exit $rc, expected 3"
	expect_has "$(cat "$TMP/err2")" "Address already in use"
	gw serve --scrape-timeout 0 2>/dev/null; [ $? -eq 2 ] || fail "--scrape-timeout 0: not exit 2"
}

test_a_scrape_during_a_collection_gets_the_last_answer() {
	need_curl
	mkdevs
	# nvmlInit takes 4 s: a collection lasts that long. Margins are wide (a loaded CI machine under ASan
	# is slow): a cached answer comes in well under 2 s, one that waited for the collection after 3.5 s.
	scenario "init_delay_ms 4000" "gpu 0" "gpu 1"   # no unexplained memory: no second sample
	start_serve --scrape-timeout 8
	curl -sf -o /dev/null "$URL/metrics" || fail "first scrape"
	curl -sf -D "$TMP/h1" -o "$TMP/m1" "$URL/metrics" & c1=$!       # starts a collection
	# Until it has: a thread of serve sleeps in the fake nvmlInit (at most 10 s, where wchan says nothing).
	for i in $(seq 1 200); do cat /proc/"$SPID"/task/*/wchan 2>/dev/null | grep -q nanosleep && break; sleep 0.05; done
	t0=$(date +%s%N)
	curl -sf -D "$TMP/h2" -o "$TMP/m2" "$URL/metrics" || fail "second scrape"
	ms=$((($(date +%s%N) - t0) / 1000000))
	expect_has "$(cat "$TMP/h2")" "X-Gpuwho-Cache: hit"
	[ "$ms" -lt 2000 ] || fail "the cached answer took $ms ms"
	expect_has "$(cat "$TMP/m2")" "gpuwho_up 1"
	wait $c1 || fail "the scrape that collected"
	grep -qi "X-Gpuwho-Cache" "$TMP/h1" && fail "a fresh answer is marked cached"
	return 0
}

test_the_scrape_timeout_gives_503_then_the_stale_answer() {
	need_curl
	mkdevs
	scenario "init_delay_ms 2000" "gpu 0" "gpu 1"
	start_serve --scrape-timeout 0.5
	code=$(curl -s -o "$TMP/b" -w '%{http_code}' "$URL/metrics")
	[ "$code" = 503 ] || fail "before the first collection ends: $code, expected 503"
	expect_has "$(cat "$TMP/b")" "within the scrape timeout"
	# Once the first collection has ended, a scrape starts another and after 0.5 s of its 2 s answers
	# with the first one's result, marked stale. Polled: the end of the first one is not timed here.
	for i in $(seq 1 40); do
		code=$(curl -s -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' "$URL/metrics")
		[ "$code" = 200 ] && break
		sleep 0.25
	done
	[ "$code" = 200 ] || fail "with an answer cached: $code, expected 200"
	expect_has "$(cat "$TMP/h")" "X-Gpuwho-Cache: "
	expect_has "$(cat "$TMP/b")" "gpuwho_up 1"
}

test_prometheus_scrape_timeout_header_lowers_the_wait() {
	need_curl
	mkdevs
	# A collection of 6 s, a scrape timeout of 10: only Prometheus' header (0.3 s) can make the first
	# scrape give up before the collection ends, with 503 (nothing cached yet) instead of 200.
	scenario "init_delay_ms 6000" "gpu 0" "gpu 1"
	start_serve --scrape-timeout 10
	t0=$(date +%s%N)
	code=$(curl -s -o "$TMP/b" -w '%{http_code}' -H 'X-Prometheus-Scrape-Timeout-Seconds: 0.3' "$URL/metrics")
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$code" = 503 ] || fail "X-Prometheus-Scrape-Timeout-Seconds 0.3 ignored: $code after $ms ms, expected 503"
	[ "$ms" -lt 4000 ] || fail "503 after $ms ms: the 0.3 s of the header were not kept"
	# A header larger than --scrape-timeout does not raise it; one that is not a number is ignored.
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Prometheus-Scrape-Timeout-Seconds: nonsense' \
		--max-time 20 "$URL/metrics")
	[ "$code" = 200 ] || fail "with a malformed header: $code, expected 200 once the collection ends"
}

test_serve_survives_1000_concurrent_scrapes_and_malformed_http_without_growing() {
	need_curl
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --comm $'bad"\n\\'; A=$HPID
	scenario "gpu 0 used_mib=2000" "gpu 1 used_mib=4096" "proc gpu=0 pid=$A mib=1542"
	start_serve
	curl -sf -o /dev/null "$URL/metrics" || fail "warm-up scrape"
	before=$(rss_kb "$SPID")
	r=$("$TESTBIN/httpflood" "$PORT" 1000 /metrics) || fail "1,000 concurrent scrapes: $r"
	expect_has "$r" "200=1000 "
	# Malformed requests: each gets an error status or a closed connection, never a crash.
	raw 'garbage\r\n\r\n' >/dev/null
	raw 'GET /metrics\r\n\r\n' >/dev/null                       # no version
	raw 'GET /metrics HTTP/9.9\r\n\r\n' >/dev/null
	raw 'G\0ET /me\0trics HTTP/1.1\r\n\r\n' >/dev/null
	raw 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n' >/dev/null
	raw 'POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n' >/dev/null
	raw 'GET /metrics HTTP/1.1\r\nHost: x\r\nBad Header No Colon\r\n\r\n' >/dev/null
	raw "GET /$(head -c 200000 /dev/zero | tr '\0' a) HTTP/1.1\r\nHost: x\r\n\r\n" >/dev/null
	raw "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: $(head -c 100000 /dev/zero | tr '\0' b)\r\n\r\n" >/dev/null
	raw "$(head -c 4096 /dev/urandom | tr -d '\0%\\' )" >/dev/null
	raw 'GET /metrics HTTP/1.1\r\nHost: x\r\n' >/dev/null          # never finished (closed by us)
	st=$(raw 'GET /healthz HTTP/1.0\r\n\r\n')
	[ "$st" = "HTTP/1.1 200 OK" ] || fail "healthz after the malformed requests: '$st'"
	kill -0 "$SPID" 2>/dev/null || fail "serve died"
	r=$("$TESTBIN/httpflood" "$PORT" 1000 /metrics) || fail "second 1,000: $r"
	after=$(rss_kb "$SPID")
	echo "RSS before ${before} kB, after 2,000 concurrent scrapes and malformed HTTP ${after} kB" >&2
	[ -z "${RSS_LOG:-}" ] || echo "$before $after" >>"$RSS_LOG"
	# Under AddressSanitizer freed memory waits in its quarantine (256 MiB) instead of being reused:
	# RSS says nothing there, survival still does.
	if ldd "$GPUWHO" 2>/dev/null | grep -q libasan; then
		echo "AddressSanitizer build: RSS not compared" >&2
	else
		[ "$after" -lt $((before + 16384)) ] || fail "RSS grew from $before kB to $after kB"
	fi
	out=$(curl -sf "$URL/metrics") || fail "scrape after all that"
	expect_has "$out" 'comm="bad\"\\n\\\\"'
}

test_sigterm_stops_serve_cleanly() {
	need_curl
	mkdevs
	scenario "gpu 0" "gpu 1"
	start_serve
	curl -sf -o /dev/null "$URL/metrics" || fail "scrape"
	kill -TERM "$SPID"
	# 20 s at most: the collector's join and, under ASan, LeakSanitizer's scan at exit.
	for i in $(seq 400); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$SPID" 2>/dev/null && fail "still running 20 s after SIGTERM"
	wait "$SPID"; rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc after SIGTERM, expected 0"
	expect_has "$(cat "$TMP/serve.err")" "SIGTERM, stopping"
	! curl -s -o /dev/null --max-time 2 "$URL/healthz" || fail "still answering"
}

run_tests
