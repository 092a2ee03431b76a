"""tally.py - the bookkeeping shared by the suite's script tests
(prom_test.py, prom_libmicrohttpd_test.py, tensorboard_test.py): a check
that fails prints what failed and the script goes on, a skip prints why,
and exit_status() prints the totals and gives ctest's status: 1 when a
check failed, 77 (SKIP_RETURN_CODE) when a part was skipped, else 0."""

passed = failed = 0
skipped = []


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)


def skip(why):
    skipped.append(why)
    print("SKIP:", why, flush=True)


def exit_status():
    print("%d passed, %d failed" % (passed, failed) + (", skipped: " + "; ".join(skipped) if skipped else ""))
    return 1 if failed else 77 if skipped else 0
