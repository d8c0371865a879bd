#!/usr/bin/env bash
# The files under deploy/ work as shipped: the alert rules pass promtool's check and fire in its
# rule evaluation (deploy/prometheus/gpuwho-rules.test.yml), the systemd units pass
# systemd-analyze verify, and every gpuwho command line in them is one gpuwho accepts.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
DEPLOY="$TESTS/../deploy"

test_alert_rules_pass_promtool_check_and_fire_in_its_rule_tests() {
	command -v promtool >/dev/null || skip "no promtool (Debian: prometheus)"
	out=$(promtool check rules "$DEPLOY/prometheus/gpuwho-rules.yml" 2>&1) || fail "check rules: $out"
	expect_has "$out" "SUCCESS: 3 rules found"
	out=$(cd "$DEPLOY/prometheus" && promtool test rules gpuwho-rules.test.yml 2>&1) || fail "test rules: $out"
	expect_has "$out" "SUCCESS"
}

test_systemd_units_verify() {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	mkdir -p "$TMP/units"
	# verify checks that ExecStart's binary exists: point it at the one under test.
	for u in gpuwho.service gpuwho-metrics.service gpuwho-metrics.timer; do
		sed "s|/usr/local/bin/gpuwho|$GPUWHO|" "$DEPLOY/systemd/$u" >"$TMP/units/$u"
	done
	out=$(cd "$TMP/units" && systemd-analyze verify ./gpuwho.service ./gpuwho-metrics.service ./gpuwho-metrics.timer 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
}

test_every_shipped_command_line_is_one_gpuwho_accepts() {
	# getopt reads options in order: an unknown one before --help is an error (exit 2), so
	# "ARGS --help" exits 0 only when every option in ARGS is known and well-formed.
	local line args
	while IFS= read -r line; do
		args=${line#ExecStart=/usr/local/bin/gpuwho }
		# shellcheck disable=SC2086
		"$GPUWHO" $args --help >/dev/null 2>"$TMP/err" || fail "$line: $(cat "$TMP/err")"
	done < <(grep -h '^ExecStart=' "$DEPLOY"/systemd/*.service)
	"$GPUWHO" serve --listen 10.0.0.7:9835 --help >/dev/null || fail "the DaemonSet's serve --listen POD_IP:9835"
	"$GPUWHO" serve --listen 0.0.0.0:9835 --help >/dev/null || fail "the Dockerfile's CMD"
	grep -q 'args: \["serve", "--listen", "$(POD_IP):9835"\]' "$DEPLOY/kubernetes/gpuwho-daemonset.yaml" ||
		fail "the DaemonSet's args changed: update this test"
	grep -q 'add: \["DAC_READ_SEARCH", "SYS_PTRACE"\]' "$DEPLOY/kubernetes/gpuwho-daemonset.yaml" || fail "capabilities"
}

# The capabilities the DaemonSet and the units grant are the ones reading another user's /proc
# needs: with both, a holder running as nobody is found; with either alone, it is not.
test_dac_read_search_and_sys_ptrace_are_both_needed_and_enough() {
	need_root
	command -v setpriv >/dev/null || skip "no setpriv"
	chmod 755 "$TMP"
	mkdir -m 777 "$TMP/nobody"
	spawn setpriv --reuid=65534 --regid=65534 --clear-groups "$HOLD" "$TMP/nobody/ready" --open /dev/full
	wait_file "$TMP/nobody/ready"
	H=$(cat "$TMP/nobody/ready")
	SPAWNED="$SPAWNED $H"
	found() { setpriv --inh-caps=-all --bounding-set="-all$1" "$GPUWHO" holders /dev/full --json | jq "[.holders[].pid] | index($H) != null"; }
	[ "$(found ,+dac_read_search,+sys_ptrace)" = true ] || fail "not found with DAC_READ_SEARCH and SYS_PTRACE"
	[ "$(found ,+sys_ptrace)" = false ] || fail "found with SYS_PTRACE alone: DAC_READ_SEARCH is not needed"
	[ "$(found ,+dac_read_search)" = false ] || fail "found with DAC_READ_SEARCH alone: SYS_PTRACE is not needed"
}

run_tests
