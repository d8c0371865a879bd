#!/usr/bin/env bash
# A real Prometheus (Debian's prometheus package) scrapes `gpuwho serve` every second: the fake
# libnvidia-ml reports a 4 GiB leak on GPU 1 (memory no process holds) and a live holder with a
# hostile name on GPU 0. Prometheus' HTTP API must show the leak as unattributed and stuck memory,
# the alert rule of deploy/ pending on it, the hostile name intact as a label, and 0 once the leak
# is cleared, on the next scrape.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
GIB=1073741824

# q PROMQL: the query's result vector as JSON (Prometheus' /api/v1/query).
q() { curl -sf --max-time 5 -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" | jq -c '.data.result'; }

# wait_q PROMQL JQ [SECONDS]: waits until the jq filter is true of q PROMQL's result.
wait_q() {
	local i r
	for i in $(seq 1 $((${3:-20} * 5))); do
		r=$(q "$1")
		[ -n "$r" ] && [ "$(jq "$2" <<<"$r" 2>/dev/null)" = true ] && return 0
		sleep 0.2
	done
	fail "query $1 never satisfied $2 (last: $r)"
}

test_prometheus_sees_the_leak_then_zero_once_it_is_cleared() {
	command -v prometheus >/dev/null || skip "no prometheus (Debian: prometheus)"
	command -v curl >/dev/null || skip "no curl"
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --comm $'tp0"}\n\\x'; A=$HPID
	scenario "gpu 0 used_mib=1542" "gpu 1 used_mib=4096" "proc gpu=0 pid=$A mib=1542"
	SPORT=$(free_port)
	GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" spawn "$GPUWHO" serve --nvml "$FAKE" \
		--listen "127.0.0.1:$SPORT" 2>"$TMP/serve.err"
	wait_http "http://127.0.0.1:$SPORT/healthz"
	PPORT=$(free_port)
	[ "$PPORT" != "$SPORT" ] || PPORT=$(free_port)
	cp "$TESTS/../deploy/prometheus/gpuwho-rules.yml" "$TMP/rules.yml"
	cat >"$TMP/prometheus.yml" <<-YML
	global:
	  scrape_interval: 3s
	  scrape_timeout: 3s
	  evaluation_interval: 1s
	rule_files: [rules.yml]
	scrape_configs:
	  - job_name: gpuwho
	    static_configs:
	      - targets: ['127.0.0.1:$SPORT']
	YML
	promtool check config "$TMP/prometheus.yml" >/dev/null 2>&1 || fail "promtool check config"
	spawn prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prometheus.log" 2>&1
	wait_http "http://127.0.0.1:$PPORT/-/ready" 30
	# The scrape itself: the target is up and its exposition parsed (a bad label would make it fail).
	wait_q 'up{job="gpuwho"}' '.[0].value[1] == "1"'
	wait_q 'gpuwho_gpu_memory_unattributed_bytes{gpu="1"}' ".[0].value[1] == \"$((4 * GIB))\""
	wait_q 'gpuwho_gpu_memory_stuck_bytes{gpu="1",verdict="driver_leak"}' ".[0].value[1] == \"$((4 * GIB))\""
	wait_q 'gpuwho_gpu_memory_unattributed_bytes{gpu="0"}' '.[0].value[1] == "0"'
	# The hostile name arrives in Prometheus as gpuwho shows it everywhere: the newline and the
	# backslash as the text \n and \\ (escape_term), the quote and the brace as they are.
	wait_q "gpuwho_process_gpu_memory_bytes{pid=\"$A\"}" ".[0].value[1] == \"$((1542 * 1048576))\""
	wait_q "gpuwho_process_gpu_memory_bytes{pid=\"$A\"}" '.[0].metric.comm == "tp0\"}\\n\\\\x"'
	# deploy/'s GPUMemoryStuck, evaluated by this Prometheus: pending (its for: is 5 minutes).
	for i in $(seq 50); do
		al=$(curl -sf "http://127.0.0.1:$PPORT/api/v1/alerts" | jq -c '[.data.alerts[] | select(.labels.alertname == "GPUMemoryStuck") | {gpu: .labels.gpu, state}]')
		[ "$al" = '[{"gpu":"1","state":"pending"}]' ] && break
		sleep 0.2
	done
	[ "$al" = '[{"gpu":"1","state":"pending"}]' ] || fail "GPUMemoryStuck: $al"
	# The leak is cleared: the next scrape reads 0.
	scenario "gpu 0 used_mib=1542" "gpu 1 used_mib=0" "proc gpu=0 pid=$A mib=1542"
	t0=$(date +%s)
	wait_q 'gpuwho_gpu_memory_unattributed_bytes{gpu="1"}' '.[0].value[1] == "0"' 20
	wait_q 'gpuwho_gpu_memory_stuck_bytes{gpu="1",verdict="driver_leak"}' '.[0].value[1] == "0"' 20
	echo "cleared leak read 0 in Prometheus within $(($(date +%s) - t0)) s" >&2
	# No scrape failed along the way (a slow collection answers with the last one, never with nothing):
	# up was 1 at every scrape since the first.
	fails=$(q 'min_over_time(up{job="gpuwho"}[10m])' | jq -r '.[0].value[1]')
	[ "$fails" = 1 ] || fail "a scrape failed along the way: min(up) = $fails"
}

run_tests
