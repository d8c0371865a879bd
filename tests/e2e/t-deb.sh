#!/usr/bin/env bash
# Packages (issue 15): the Debian package builds with the standard tools, is lintian-clean at the
# warning level, installs in a clean Debian 12 chroot (debootstrap --variant=minbase) and runs
# there; `make static`'s binary runs in that chroot before the package brings libjansson, i.e.
# with nothing but glibc. Slow (a minute or two: debootstrap fetches the base system), so it runs
# once, in `make check`, not again under ASan (whose binaries are not what is shipped).
. "$(dirname "$0")/lib.sh"
SRC="$TESTS/.."
VERSION=$(cat "$SRC/VERSION")

# build_deb: copies the tree (tracked and new files, not build outputs) and builds the package there;
# sets DEB to its path.
build_deb() {
	local t
	case "$GPUWHO" in */build-asan/*) skip "the package is built and checked once, by make check (not under ASan)" ;; esac
	need_root
	for t in dpkg-buildpackage dh lintian debootstrap; do command -v "$t" >/dev/null || skip "no $t"; done
	mkdir -p "$TMP/pkg/gpuwho-$VERSION"
	(cd "$SRC" && git ls-files -co --exclude-standard | grep -v '^debian/gpuwho/' | tar -cf - -T -) | tar -xf - -C "$TMP/pkg/gpuwho-$VERSION"
	(cd "$TMP/pkg/gpuwho-$VERSION" && dpkg-buildpackage -us -uc -b) >"$TMP/build.log" 2>&1 || fail "dpkg-buildpackage: $(tail -20 "$TMP/build.log")"
	DEB="$TMP/pkg/gpuwho_${VERSION}_amd64.deb"
	[ -f "$DEB" ] || DEB=$(ls "$TMP"/pkg/gpuwho_"$VERSION"_*.deb | head -1)
	[ -f "$DEB" ] || fail "no .deb built: $(ls "$TMP/pkg")"
}

test_the_debian_package_builds_and_is_lintian_clean_at_warning_level() {
	build_deb
	out=$(cd "$TMP/pkg" && lintian --fail-on warning gpuwho_"$VERSION"_*.changes 2>&1) || fail "lintian: $out"
	files=$(dpkg-deb -c "$DEB")
	for f in ./usr/bin/gpuwho ./usr/share/man/man1/gpuwho.1.gz ./usr/share/bash-completion/completions/gpuwho \
		./usr/share/doc/gpuwho/copyright; do
		expect_has "$files" "$f"
	done
}

test_the_package_installs_and_runs_in_a_clean_debian_12_chroot_and_so_does_make_static() {
	build_deb
	root="$TMP/root"
	debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$TMP/debootstrap.log" 2>&1 ||
		skip "debootstrap could not build a Debian 12 chroot (network?): $(tail -1 "$TMP/debootstrap.log")"
	make -s -C "$SRC" static >/dev/null || fail "make static failed"
	cp "$SRC/build-static/gpuwho-static" "$root/usr/local/bin/gpuwho-static"
	cp "$SRC/examples/seed-container.json" "$root/tmp/seed.json"
	cp "$DEB" "$root/tmp/gpuwho.deb"
	in_root() { unshare -m -- sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$root" "$@"; }
	# The static binary first: no libjansson in a minbase system.
	in_root sh -c 'ls /usr/lib/*/libjansson* 2>/dev/null' && fail "the chroot is not clean: libjansson is there"
	out=$(in_root /usr/local/bin/gpuwho-static --version) || fail "static binary: exit $?: $out"
	[ "$out" = "gpuwho $VERSION" ] || fail "static --version: $out"
	out=$(in_root /usr/local/bin/gpuwho-static why --from /tmp/seed.json --no-color); [ $? -eq 1 ] || fail "static why: $out"
	expect_has "$out" "not a driver leak"
	# No HTTP server in it (libmicrohttpd needs GnuTLS): it says so and what to use instead.
	out=$(in_root /usr/local/bin/gpuwho-static serve 2>&1); [ $? -eq 3 ] || fail "static serve: exit $?"
	expect_has "$out" "gpuwho metrics -o FILE"
	in_root apt-get install -y -q /tmp/gpuwho.deb >"$TMP/apt.log" 2>&1 || fail "apt-get install: $(tail -5 "$TMP/apt.log")"
	out=$(in_root gpuwho --version) || fail "installed gpuwho: exit $?"
	[ "$out" = "gpuwho $VERSION" ] || fail "installed --version: $out"
	out=$(in_root gpuwho holders /tmp/seed.json) || fail "installed holders: exit $?"
	in_root test -f /usr/share/man/man1/gpuwho-why.1.gz || fail "man page not installed"
	in_root apt-get remove -y -q gpuwho >/dev/null 2>&1 || fail "apt-get remove failed"
	in_root test ! -e /usr/bin/gpuwho || fail "gpuwho left behind after remove"
}

run_tests
