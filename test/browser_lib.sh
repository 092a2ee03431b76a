# browser_lib.sh - what the headless-browser tests share (sourced, not run):
# finds Chromium (skipping the test, exit 77, when there is none), makes
# the test's temporary directory (removed at exit) and its failure flag.
#   usage: browser_test_name=NAME; . browser_lib.sh   (NAME names the
#   temporary directory; sh's "." passes no arguments)

CHROME=""
for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then
        CHROME=$(command -v "$c")
        break
    fi
done
if [ -z "$CHROME" ]; then
    echo "SKIP: no headless browser: chromium is not installed (apt-get install chromium, or scripts/install-deps.sh)"
    exit 77
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sps-$browser_test_name.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
fail=0
failed() {
    echo "FAIL: $*"
    fail=1
}
