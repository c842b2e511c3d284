#!/usr/bin/env bash
# e2e: the Debian package. Runs cpack on the build directory of $NEARDUP (its
# package and staging go to the scratch folder), reads the package's control
# fields, extracts it into a scratch root with dpkg-deb -x (nothing is
# installed on this machine), and runs the extracted binary on the extracted
# configuration. Every command is bounded by a timeout.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
src=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
name=package_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (deploy/install-deps.sh: cmake, dpkg-dev)"
done

# $NEARDUP is <build>/app/neardup.
build=$(cd "$(dirname "$NEARDUP")/.." && pwd)
[ -f "$build/CPackConfig.cmake" ] || fail "no CPackConfig.cmake in $build (the build directory of $NEARDUP)"
timeout 120 cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/pkg" >"$work/cpack.out" 2>&1 ||
  fail "cpack -G DEB failed: $(tail -20 "$work/cpack.out")"
pass

# neardup 0.2.0-dev (git abc1234) -> neardup_0.2.0~dev_amd64.deb
version_line=$(timeout 20 "$NEARDUP" --version)
[[ "$version_line" =~ ^neardup\ ([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?)\ \(git\ ([0-9a-f]{4,40}|unknown)\)$ ]] ||
  fail "neardup --version: '$version_line' is not 'neardup X.Y.Z[-pre] (git REV)'"
version=${BASH_REMATCH[1]}
deb_version=${version//-/\~}
arch=$(dpkg --print-architecture)
deb=$work/pkg/neardup_${deb_version}_${arch}.deb
[ -f "$deb" ] || fail "expected $(basename "$deb"), cpack made: $(ls "$work/pkg")"
pass

field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = neardup ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$deb_version" ] || fail "Version: $(field Version), expected $deb_version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
pass
depends=$(field Depends)
[ -n "$depends" ] || fail "the package has no Depends (CPACK_DEBIAN_PACKAGE_SHLIBDEPS)"
grep -q 'librdkafka' <<<"$depends" || fail "Depends does not name librdkafka: $depends"
grep -q 'libyaml-cpp' <<<"$depends" || fail "Depends does not name libyaml-cpp: $depends"
pass
[ -n "$(field Maintainer)" ] && [ -n "$(field Description)" ] && [ -n "$(field Section)" ] ||
  fail "Maintainer, Description or Section missing: $(dpkg-deb -f "$deb")"
pass

# Control files: the configuration is a conffile; no maintainer script (the
# unit is installed, not enabled or started).
dpkg-deb -e "$deb" "$work/control"
[ "$(cat "$work/control/conffiles")" = /etc/neardup/neardup.yaml ] ||
  fail "conffiles: $(cat "$work/control/conffiles" 2>/dev/null)"
for script in preinst postinst prerm postrm; do
  [ ! -e "$work/control/$script" ] || fail "the package has a $script: $(cat "$work/control/$script")"
done
pass

root=$work/root
dpkg-deb -x "$deb" "$root"
bin=$root/usr/bin/neardup
[ -x "$bin" ] || fail "no executable /usr/bin/neardup in the package: $(dpkg-deb -c "$deb")"
[ "$(timeout 20 "$bin" --version)" = "$version_line" ] ||
  fail "the packaged binary says '$(timeout 20 "$bin" --version)', the build's '$version_line'"
pass

conf=$root/etc/neardup/neardup.yaml
cmp -s "$conf" "$src/deploy/examples/cluster.yaml" ||
  fail "/etc/neardup/neardup.yaml is not deploy/examples/cluster.yaml"
timeout 20 "$bin" config check "$conf" >"$work/check.out" 2>"$work/check.err" ||
  fail "neardup config check /etc/neardup/neardup.yaml failed: $(cat "$work/check.err")"
grep -q ': ok$' "$work/check.out" || fail "config check printed no ok line: $(head -3 "$work/check.out")"
pass

unit=$root/lib/systemd/system/neardup.service
[ -f "$unit" ] || fail "no /lib/systemd/system/neardup.service in the package"
grep -qx 'ExecStart=/usr/bin/neardup run --config /etc/neardup/neardup.yaml' "$unit" ||
  fail "the unit's ExecStart: $(grep ExecStart "$unit")"
grep -qx 'RestartPreventExitStatus=2' "$unit" && grep -qx 'WantedBy=multi-user.target' "$unit" ||
  fail "the unit lost lines of deploy/systemd/neardup.service"
[ ! -e "$root/usr/share/neardup/systemd" ] || fail "the package also carries the /usr/local unit"
if command -v systemd-analyze >/dev/null; then
  # verify needs the ExecStart binary to exist: point it at the extracted one.
  sed "s#^ExecStart=/usr/bin/neardup #ExecStart=$bin #" "$unit" >"$work/neardup.service"
  out=$(timeout 30 systemd-analyze verify "$work/neardup.service" 2>&1 || true)
  ! grep -q neardup.service <<<"$out" || fail "systemd-analyze verify: $out"
fi
pass

doc=$root/usr/share/doc/neardup
for f in README.md CHANGELOG.md copyright config/README.md deploy/README.md; do
  [ -s "$doc/$f" ] || fail "no /usr/share/doc/neardup/$f"
done
for f in "$src"/docs/*.md; do
  cmp -s "$f" "$doc/docs/$(basename "$f")" || fail "/usr/share/doc/neardup/docs/$(basename "$f") missing or stale"
done
for f in cluster.yaml embedded.yaml; do
  [ -s "$root/usr/share/neardup/examples/$f" ] || fail "no /usr/share/neardup/examples/$f"
done
pass

# neardup(1), made from the help texts: a section per command, as `neardup help` prints it.
man1=$root/usr/share/man/man1/neardup.1
[ -s "$man1" ] || fail "no /usr/share/man/man1/neardup.1 in the package"
for command in run scan "config check"; do
  grep -qx ".SS neardup $command" "$man1" || fail "neardup.1 has no section for neardup $command"
done
grep -qF "$(timeout 20 "$NEARDUP" help scan | sed -n 1p)" "$man1" || fail "neardup.1 lacks scan's usage line"
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$man1" 2>"$work/groff.err" || fail "groff cannot render neardup.1"
  [ ! -s "$work/groff.err" ] || fail "groff warns on neardup.1: $(head -5 "$work/groff.err")"
fi
pass

# CHANGELOG.md's newest section is the version being built: [Unreleased]
# between releases (X.Y.Z-pre), [X.Y.Z] at a release.
newest=$(grep -m1 '^## \[' "$doc/CHANGELOG.md")
if [[ "$version" == *-* ]]; then
  [[ "$newest" == '## [Unreleased]'* ]] || fail "a $version build's CHANGELOG.md starts with '$newest', not [Unreleased]"
else
  [[ "$newest" == "## [$version]"* ]] || fail "a $version build's CHANGELOG.md starts with '$newest'"
fi
pass

rm -rf "$root"
[ ! -e "$root" ] || fail "could not remove the scratch root $root"
echo "package_test: $passed passed, 0 failed"
