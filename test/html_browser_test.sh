#!/bin/sh
# html_browser_test.sh BUILD_DIR - open a real report.html in headless
# Chromium: the page must log nothing to the console (no script error, no
# resource the Content-Security-Policy had to block), its charts must be in
# the rendered DOM, and a 1280 px wide screenshot must show them.
#
# Exits 77 (ctest SKIP_RETURN_CODE) with the reason when Chromium is not
# installed.  SPS_SCREENSHOT_OUT=FILE keeps the screenshot.
set -u
BUILD=${1:?usage: html_browser_test.sh BUILD_DIR}

browser_test_name=html-browser
. "$(dirname "$0")/browser_lib.sh"

# browser PAGE MODE...: run Chromium on file://PAGE with a fresh profile;
# its log (console messages included) goes to $TMP/log
browser() {
    page=$1
    shift
    rm -rf "$TMP/profile"
    # root needs --no-sandbox; the virtual time budget lets the page settle
    timeout 60 "$CHROME" --headless=new --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --user-data-dir="$TMP/profile" --enable-logging=stderr --v=0 --virtual-time-budget=3000 \
        "$@" "file://$page" 2>"$TMP/log"
}

# console messages: "INFO:CONSOLE:1]" in Chromium 1xx, "CONSOLE(1)" before
console_lines() {
    grep -E 'CONSOLE[:(]|Uncaught|Refused to' "$TMP/log"
}

# 1. The detector must see errors, or a silent page would prove nothing:
#    a blocked remote image and an uncaught exception must both show up.
cat >"$TMP/canary.html" <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">
</head><body><img src="https://example.invalid/x.png" alt=""><script>throw new Error("canary-boom")</script></body></html>
HTML
browser "$TMP/canary.html" --dump-dom >/dev/null
console_lines | grep -q 'example.invalid' || failed "the console log does not show a blocked remote image"
console_lines | grep -q 'canary-boom' || failed "the console log does not show an uncaught exception"

# 2. A real run directory and the report.html `stepscope run` made from
#    the run's model (the records and the sampler's series); `stepscope
#    report` must make one from the directory too.
#    (--torch-mem: the values the Python module records from torch.cuda's
#    allocator, for the GPU memory chart)
"$BUILD/stepscope" run -q -o "$TMP/run" -- "$BUILD/test_workload" --steps 30 --warmup 3 --alloc-mb 16 \
    --burn-ms 200 --sleep-ms 100 --torch-mem || failed "stepscope run exited $?"
PAGE="$TMP/run/report.html"
[ -s "$PAGE" ] || { failed "no report.html"; exit 1; }
"$BUILD/stepscope" report "$TMP/run" --format html -o "$TMP/again.html" || failed "stepscope report exited $?"
[ -s "$TMP/again.html" ] || failed "stepscope report wrote no report.html"

browser "$PAGE" --dump-dom >"$TMP/dom.html"
if console_lines >"$TMP/console"; then
    failed "console messages while loading report.html:"
    cat "$TMP/console"
fi
svgs=$(grep -o '<svg' "$TMP/dom.html" | wc -l)
rects=$(grep -o '<rect' "$TMP/dom.html" | wc -l)
lines=$(grep -o '<polyline' "$TMP/dom.html" | wc -l)
[ "$svgs" -ge 4 ] || failed "rendered DOM has $svgs <svg> (expected at least 4)"
# every bar the page holds is in the DOM the browser built (how many there
# are depends on what the run measured: 30 steps make at least 30)
want=$(grep -o '<rect' "$PAGE" | wc -l)
[ "$want" -ge 30 ] || failed "report.html has $want <rect> (expected at least 30: a chart of 30 steps)"
[ "$rects" -eq "$want" ] || failed "rendered DOM has $rects <rect>, the page $want"
[ "$lines" -ge 2 ] || failed "rendered DOM has $lines <polyline> (expected at least 2)"
for id in step-time values torch-memory phases memory cpu gpu temperature power zones; do
    grep -q "<section id=\"$id\"" "$TMP/dom.html" || failed "rendered DOM lacks section $id"
done

# 3. A screenshot 1280 px wide: a PNG of that width, and far more than a
#    blank page compresses to (a white 1280x2400 PNG is about 10 KB).
browser "$PAGE" --window-size=1280,2400 --screenshot="$TMP/shot.png" >/dev/null
if [ -s "$TMP/shot.png" ]; then
    size=$(wc -c <"$TMP/shot.png")
    sig=$(od -An -c -j1 -N3 "$TMP/shot.png" | tr -d ' ')
    width=$(od -An -tu1 -j16 -N4 "$TMP/shot.png" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
    [ "$sig" = "PNG" ] || failed "the screenshot is not a PNG"
    [ "$width" -eq 1280 ] || failed "the screenshot is $width px wide, not 1280"
    [ "$size" -ge 60000 ] || failed "the screenshot is $size bytes: next to nothing was drawn"
    [ -n "${SPS_SCREENSHOT_OUT:-}" ] && cp "$TMP/shot.png" "$SPS_SCREENSHOT_OUT"
else
    failed "no screenshot"
fi

if [ "$fail" -ne 0 ]; then
    echo "html_browser_test: FAILED (browser log: last lines)"
    tail -n 20 "$TMP/log"
    exit 1
fi
echo "html_browser_test: ok ($svgs charts, $rects rects, $lines polylines, screenshot $size bytes)"
exit 0
