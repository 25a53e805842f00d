#!/usr/bin/env bash
# Simulates a scenario, writes its HTML report and renders the report in
# headless Chromium, to see the page as a browser draws it.
#
#   hack/report-screenshot.sh [SCENARIO] [OUT.png]
#   hack/report-screenshot.sh --install-chromium
#
# SCENARIO is what `stevedore simulate` reads (default examples/drift-upgrade).
# OUT.png defaults to stevedore-report.png in the temporary directory; the
# report itself is written next to it, as OUT.html. When no Chromium is on
# PATH, Debian's chromium package is installed with apt-get (as root, or with
# sudo); --install-chromium does only that. CHROMIUM names another binary.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

find_chromium() {
	local c
	for c in ${CHROMIUM:-} chromium chromium-browser google-chrome; do
		if command -v "$c" >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

install_chromium() {
	if find_chromium >/dev/null; then
		return 0
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "no Chromium on PATH and no apt-get to install it: install Chromium, or set CHROMIUM" >&2
		exit 1
	fi
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo=sudo
	fi
	echo "installing Debian's chromium..." >&2
	local started=$SECONDS
	if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; then
		$sudo apt-get update >/dev/null
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null
	fi
	echo "installed chromium in $((SECONDS - started))s" >&2
}

if [ "${1:-}" = "--install-chromium" ]; then
	install_chromium
	exit 0
fi

scenario=${1:-$root/examples/drift-upgrade}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${2:-${TMPDIR:-/tmp}/stevedore-report.png}
case $out in
/*) ;;
*) out=$PWD/$out ;;
esac
case $scenario in
/*) ;;
*) scenario=$PWD/$scenario ;;
esac
page=${out%.png}.html

install_chromium
browser=$(find_chromium)

(cd "$root" && go build -o "$tmp/stevedore" ./cmd/stevedore)
rm -f "$out"
"$tmp/stevedore" simulate "$scenario" --report "$page" >"$tmp/summary.txt"

if ! "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--user-data-dir="$tmp/profile" --window-size=1400,2400 --screenshot="$out" \
	"file://$page" >"$tmp/chromium.log" 2>&1 || [ ! -s "$out" ]; then
	cat "$tmp/chromium.log" >&2
	echo "chromium did not write $out" >&2
	exit 1
fi
echo "report:     $page"
echo "screenshot: $out"
