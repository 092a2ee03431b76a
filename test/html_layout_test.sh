#!/bin/sh
# html_layout_test.sh BUILD_DIR - lay report.html out in headless Chromium
# at a 1280 px wide window and measure its tables through the DOM: every
# column at least 4 characters wide (none squeezed to a letter a line),
# no cell whose content overflows its box, and every table within its
# section (no sideways scrolling at that width).
#
# The pages are real: `stepscope run` of leaky_train with a leaking worker
# (the leaks table with a row per process and a sentence per row, the
# energy table's long reasons, the bottleneck's evidence and windows) and
# of test_workload.  A copy of each page gets a script that writes the
# measurements into the DOM (its Content-Security-Policy allows that
# script and nothing else); --dump-dom brings them back.
#
# Exits 77 (ctest SKIP_RETURN_CODE) with the reason when Chromium is not
# installed.  SPS_LAYOUT_KEEP=DIR keeps the pages and measurements.  With
# pages after BUILD_DIR it measures those instead of making its own.
set -u
BUILD=${1:?usage: html_layout_test.sh BUILD_DIR [PAGE...]}
shift

browser_test_name=html-layout
. "$(dirname "$0")/browser_lib.sh"

# The measuring script: one line per table,
#   table SECTION#N ch=CHAR_PX width=PX section=PX cols=PX,PX,... narrow=K overflow=K [cells]
# and a first line with the window's width.
cat >"$TMP/measure.js" <<'JS'
(function () {
  var out = ["viewport " + window.innerWidth];
  var tables = document.querySelectorAll("table");
  for (var ti = 0; ti < tables.length; ti++) {
    var t = tables[ti], sec = t.closest("section"), id = sec ? sec.id : "?";
    /* a character of the table's font: the width of a digit */
    var probe = document.createElement("span");
    probe.style.font = getComputedStyle(t).font;
    probe.style.position = "absolute";
    probe.style.whiteSpace = "pre";
    probe.textContent = "0000000000";
    document.body.appendChild(probe);
    var ch = probe.getBoundingClientRect().width / 10;
    probe.remove();
    var ncols = 0, r, c;
    for (r = 0; r < t.rows.length; r++) ncols = Math.max(ncols, t.rows[r].cells.length);
    var widths = [], narrow = 0;
    for (c = 0; c < ncols; c++) {
      var w = 0;
      for (r = 0; r < t.rows.length; r++)
        if (t.rows[r].cells.length === ncols) { w = t.rows[r].cells[c].getBoundingClientRect().width; break; }
      widths.push(w.toFixed(0));
      if (w < 4 * ch) narrow++;
    }
    var over = [];
    for (r = 0; r < t.rows.length; r++)
      for (c = 0; c < t.rows[r].cells.length; c++) {
        var cell = t.rows[r].cells[c];
        if (cell.scrollWidth > cell.clientWidth + 1) over.push(cell.textContent.slice(0, 40));
      }
    out.push("table " + id + "#" + ti + " ch=" + ch.toFixed(2) + " width=" + t.getBoundingClientRect().width.toFixed(0) +
             " section=" + (sec ? sec.clientWidth : 0) + " cols=" + widths.join(",") + " narrow=" + narrow +
             " overflow=" + over.length + (over.length ? " [" + over.join(" | ") + "]" : ""));
  }
  var pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
})();
JS

# measure NAME PAGE: the page laid out at 1280 px, its tables checked
measure() {
    name=$1
    page=$2
    [ -s "$page" ] || { failed "$name: no report.html"; return; }
    # the page's policy forbids every script; the copy allows this one
    sed -e "s/content=\"default-src 'none'; style-src 'unsafe-inline'/content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'/" \
        "$page" >"$TMP/$name.html"
    grep -q "script-src 'unsafe-inline'" "$TMP/$name.html" || { failed "$name: cannot relax the page's policy"; return; }
    { printf '<script>'; cat "$TMP/measure.js"; printf '</script>\n'; } >"$TMP/script.html"
    sed -i -e "/<\/main>/r $TMP/script.html" "$TMP/$name.html"
    rm -rf "$TMP/profile"
    # root needs --no-sandbox; the virtual time budget lets the page settle
    timeout 60 "$CHROME" --headless=new --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --user-data-dir="$TMP/profile" --window-size=1280,3000 --virtual-time-budget=3000 --dump-dom \
        "file://$TMP/$name.html" >"$TMP/$name.dom" 2>"$TMP/$name.log"
    sed -n '/<pre id="layout">/,/<\/pre>/p' "$TMP/$name.dom" | sed -e 's/.*<pre id="layout">//' -e 's/<\/pre>.*//' \
        >"$TMP/$name.layout"
    viewport=$(sed -n 's/^viewport //p' "$TMP/$name.layout")
    [ "$viewport" = "1280" ] || { failed "$name: the window is ${viewport:-not} 1280 px wide"; return; }
    tables=$(grep -c '^table ' "$TMP/$name.layout")
    [ "$tables" -ge "$3" ] || failed "$name: $tables tables measured (expected at least $3)"
    # every table: no narrow column, no overflowing cell, within its section
    awk -v name="$name" '
        /^table / {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            bad = ""
            if (v["narrow"] + 0 > 0) bad = bad " a column under 4 characters wide"
            if (v["overflow"] + 0 > 0) bad = bad " cells overflow"
            if (v["width"] + 0 > v["section"] + 1) bad = bad " wider than its section"
            if (bad != "") { print "FAIL: " name ": " $2 ":" bad ": " $0; failures++ }
        }
        END { exit failures > 0 }' "$TMP/$name.layout" || fail=1
    cat "$TMP/$name.layout"
    [ -n "${SPS_LAYOUT_KEEP:-}" ] && mkdir -p "$SPS_LAYOUT_KEEP" && cp "$TMP/$name.html" "$TMP/$name.layout" \
        "$SPS_LAYOUT_KEEP/"
}

if [ $# -gt 0 ]; then
    n=0
    for page in "$@"; do
        n=$((n + 1))
        measure "page$n" "$page" 1
    done
    [ "$fail" -eq 0 ] && echo "html_layout_test: ok" && exit 0
    echo "html_layout_test: FAILED"
    exit 1
fi

# 1. A leak in a worker process: the leaks table has a row per process,
#    each with its reason; no GPU and no RAPL here, so the energy table's
#    reasons are long sentences.
"$BUILD/stepscope" run -q -o "$TMP/leaky" -- "$BUILD/leaky_train" --steps 60 --step-ms 10 --leak-kib 0 \
    --worker-leak-kib 256 >/dev/null || failed "stepscope run leaky_train exited $?"
measure leaky "$TMP/leaky/report.html" 6
grep -q '^table leaks#' "$TMP/leaky.layout" || failed "leaky: no leaks table measured"
grep -q '^table energy#' "$TMP/leaky.layout" || failed "leaky: no energy table measured"

# 2. The test workload: zones, a counter and the bottleneck's windows.
"$BUILD/stepscope" run -q -o "$TMP/work" -- "$BUILD/test_workload" --steps 40 --warmup 3 --burn-ms 100 \
    --sleep-ms 50 >/dev/null || failed "stepscope run test_workload exited $?"
measure work "$TMP/work/report.html" 6

# 3. A page made to stress the tables (test_html --stress-page): sentences
#    in every table that has a column for them, names that are one long
#    word, a leaks row per process, every kind of recording priced.
"$BUILD/test_html" --stress-page "$TMP/stress-page.html" || failed "test_html --stress-page exited $?"
measure stress "$TMP/stress-page.html" 6

if [ "$fail" -ne 0 ]; then
    echo "html_layout_test: FAILED"
    exit 1
fi
echo "html_layout_test: ok"
exit 0
