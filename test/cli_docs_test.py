#!/usr/bin/python3
"""cli_docs_test.py SOURCE_DIR STEPSCOPE - the command line and its
documentation say the same thing.

- Each command's options, as its parser in tools/cli compares them, are
  the options its `--help` lists, the options docs/stepscope.1 lists in
  its section of COMMANDS, the options docs/cli.md's section of it names
  (its table, if it has one, names no other), and the options the bash
  completion offers (tools/completion/stepscope.bash); with the same
  metavariables in the usage line, the option list, the top-level help
  and the man page.
- Every command is in the man page's SYNOPSIS and COMMANDS, docs/cli.md
  and the completion; every exit status a `--help` gives is in the man
  page's EXIT STATUS for that command; every file name the code writes
  is in its FILES; every STEPSCOPE_* variable the code reads is in its
  ENVIRONMENT; the report formats are the parser's.
- Each `--help`: the usage line first, at most 80 columns, no tab or
  trailing blank, option descriptions in one column (26) with their
  continuation lines, no doubled space outside that alignment, no word
  left alone on a paragraph's last line.
- The man page renders without a warning (groff -ww, mandoc -Tlint), its
  examples fit 80 columns, and man-db's lexgrog reads its whatis entry.

Exit 77 (skip) when groff, mandoc or lexgrog is missing, after the other
checks.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

SRC, STEPSCOPE = sys.argv[1], sys.argv[2]
COMMANDS = ["run", "snapshot", "report", "compare", "merge", "doctor"]
PARSERS = {c: "tools/cli/cmd_%s.c" % c for c in COMMANDS}
OPTION_COLUMN = 26  # where every --help's option descriptions start
# Accepted and ignored: in --help and the man page, never offered.
DEPRECATED = {"compare": {"--resamples", "--seed"}}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def help_text(cmd):
    argv = [STEPSCOPE] + ([cmd] if cmd else []) + ["--help"]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0 or p.stderr:
        fail("%s: exit %d, stderr %r" % (" ".join(argv[1:]), p.returncode, p.stderr))
    return p.stdout


# ------------------------------------------------------------ the parsers

def parser_options(path):
    """The option strings a parser compares arguments with."""
    src = read(path)
    opts = set(re.findall(r'strcmp\(\s*[\w\[\]]+\s*,\s*"(-[-\w]*)"\s*\)', src))
    # run lists the options that take a value in a table of its own
    m = re.search(r"with_value\[\]\s*=\s*\{(.*?)\}", src, re.S)
    if m:
        opts |= set(re.findall(r'"(-[-\w]*)"', m.group(1)))
    return {o for o in opts if o not in ("-", "--")}


def main_commands_and_options():
    src = read("tools/cli/main.c")
    cmds = set(re.findall(r'!strcmp\(cmd, "(\w+)"\)\)\s*\n\s*return sps_cmd_\1', src))
    opts = set(re.findall(r'strcmp\(cmd, "(-[-\w]+)"\)', src))
    return cmds, opts


# ---------------------------------------------------------------- --help

OPT_LINE = re.compile(r"^(?:  (-\w)(?:, (--[\w-]+))?|      (--[\w-]+))(?: ([^ ]+))?(?:( {2,})(\S.*))?$")


def parse_help(cmd, text):
    """{option: metavar or None} of the options section, checking its
    layout; and the exit status paragraph."""
    where = "stepscope %s--help" % (cmd + " " if cmd else "")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith("usage: stepscope" + (" " + cmd if cmd else " ")):
        fail("%s: the first line is not its usage: %r" % (where, lines[0] if lines else ""))
    opts = {}
    in_opts = False
    indents = set()
    for n, line in enumerate(lines, 1):
        if len(line) > 80:
            fail("%s line %d: %d columns: %r" % (where, n, len(line), line))
        if "\t" in line or line != line.rstrip():
            fail("%s line %d: a tab or a trailing blank: %r" % (where, n, line))
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if line == "options:":
            in_opts = True
            continue
        if not line:
            in_opts = False
            continue
        if in_opts:
            m = OPT_LINE.match(line)
            if m and not (indent == OPTION_COLUMN):
                short, long_, long_only, meta, gap, desc = m.groups()
                names = [x for x in (short, long_, long_only) if x]
                for name in names:
                    if name in opts and opts[name] != meta and meta:
                        opts[name] = opts[name] + "|" + meta  # --fail-on slower / PCT
                    else:
                        opts.setdefault(name, meta)
                head = len(line) - (len(desc) if desc else 0)
                if desc and head != OPTION_COLUMN:
                    fail("%s line %d: the description starts at column %d, not %d: %r"
                         % (where, n, head, OPTION_COLUMN, line))
                if not desc and len(line) < OPTION_COLUMN - 2:
                    fail("%s line %d: a short option with its description on the next line: %r"
                         % (where, n, line))
            elif indent != OPTION_COLUMN:
                fail("%s line %d: neither an option nor a description at column %d: %r"
                     % (where, n, OPTION_COLUMN, line))
        elif indent > 2:
            indents.add(indent)
    # doubled spaces: only the gap before an aligned column
    columns = indents | {OPTION_COLUMN}
    for n, line in enumerate(lines, 1):
        for m in re.finditer(r"(?<=\S)( {2,})(?=\S)", line):
            if m.end() not in columns:
                fail("%s line %d: a doubled space at column %d: %r" % (where, n, m.start(), line))
    # a word alone on the last line of a paragraph or a description
    for n in range(1, len(lines)):
        line, prev = lines[n], lines[n - 1]
        nxt = lines[n + 1] if n + 1 < len(lines) else ""
        stripped = line.strip()
        ends = not nxt.strip() or OPT_LINE.match(nxt) or len(nxt) - len(nxt.lstrip()) < len(line) - len(line.lstrip())
        if (stripped and " " not in stripped and prev.strip() and not stripped.endswith(":")
                and not stripped.startswith("-") and ends
                and len(prev) - len(prev.lstrip()) <= len(line) - len(line.lstrip())):
            fail("%s line %d: a word alone on its line: %r" % (where, n + 1, line))
    return opts, lines


def exit_paragraph(lines):
    out, on = [], False
    for line in lines:
        if line.startswith("exit status"):
            on = True
        elif on and not line.strip():
            break
        if on:
            out.append(line)
    return " ".join(out)


def exit_codes(text):
    text = re.sub(r"signal N", "", text)
    codes = set(re.findall(r"\b128\+N\b", text))
    codes |= set(re.findall(r"(?<![\w+.-])(\d{1,3})(?![\w+.%-])", text))
    return codes


def usage_metavars(text):
    """{option: metavar} of every [-x META] in usage lines."""
    return dict(re.findall(r"\[(-[-\w]+) ([A-Z][A-Z_:.]*)\]", text))


# ----------------------------------------------------------- the man page

def roff_inline(s):
    s = re.sub(r"\\f(\[[A-Z]*\]|[BIRP])", "", s)
    s = s.replace("\\-", "-").replace("\\&", "").replace("\\%", "").replace("\\c", "")
    s = s.replace("\\(lq", '"').replace("\\(rq", '"').replace("\\e", "\\")
    return s


def roff_args(s):
    return [a[1:-1] if a.startswith('"') else a for a in re.findall(r'"[^"]*"|\S+', s)]


def roff_line(line):
    """A line of the man page as plain text (macros' arguments joined as
    they print)."""
    m = re.match(r"^\.(\w+)\s*(.*)$", line)
    if not m:
        return roff_inline(line)
    macro, rest = m.groups()
    args = roff_args(rest)
    if macro in ("B", "I", "SM", "SS", "SH", "SY"):
        return roff_inline(" ".join(args))
    if macro in ("BR", "BI", "IR", "RB", "RI", "IB"):
        return roff_inline("".join(args))
    if macro == "OP":
        return roff_inline("[" + " ".join(args) + "]")
    return ""


def man_sections(src):
    """{SH name: [roff lines]}."""
    out, cur = {}, None
    for line in src.split("\n"):
        m = re.match(r"^\.SH\s+(.*)$", line)
        if m:
            cur = roff_line(line).strip('"')
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def man_tp_entries(lines):
    """[(tag text, body text)] of the .TP entries in lines."""
    entries, i = [], 0
    while i < len(lines):
        if lines[i].startswith(".TP"):
            tag = lines[i + 1]
            while tag.endswith("\\"):  # a continued macro line
                i += 1
                tag = tag[:-1] + lines[i + 1]
            body, j = [], i + 2
            while j < len(lines) and not re.match(r"^\.(TP|SH|SS|PP)\b", lines[j]):
                body.append(roff_line(lines[j]))
                j += 1
            entries.append((roff_line(tag), " ".join(body)))
            i = j
        else:
            i += 1
    return entries


def man_command_sections(commands_lines):
    """{command: [roff lines]} of the .SS subsections of COMMANDS."""
    out, cur = {}, None
    for line in commands_lines:
        m = re.match(r'^\.SS\s+"?stepscope (\w+)', line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, [])
        elif cur:
            out[cur].append(line)
    return out


def tag_options(tag):
    """{option: metavar} of a .TP tag such as "-o, --output DIR"."""
    words = tag.replace(",", " ").split()
    names = [w for w in words if w.startswith("-")]
    metas = [w for w in words if not w.startswith("-")]
    meta = metas[0] if metas else None
    return {n: meta for n in names}


# ------------------------------------------------------------ the checks

def check_same(what, a_name, a, b_name, b):
    for x in sorted(a - b):
        fail("%s: %s has %s, %s does not" % (what, a_name, x, b_name))
    for x in sorted(b - a):
        fail("%s: %s has %s, %s does not" % (what, b_name, x, a_name))


def completion_takes_value(cmd, options):
    """The options of cmd that the completion takes to have a value."""
    script = os.path.join(SRC, "tools/completion/stepscope.bash")
    line = ". %s; for o in %s; do _stepscope_takes_value %s $o && echo $o; done" % (
        script, " ".join(sorted(options)), cmd)
    p = subprocess.run(["bash", "-c", line], capture_output=True, text=True)
    return set(p.stdout.split())


def completion_lists():
    script = os.path.join(SRC, "tools/completion/stepscope.bash")
    cmd = ". %s; echo \"$_stepscope_commands\"; echo $_stepscope_opts_top" % script
    for c in COMMANDS:
        cmd += "; echo $_stepscope_opts_%s" % c
    # the value lists: what `--format` completes to
    cmd += ("; COMPREPLY=(); _stepscope_complete_value report --format ''; echo ${COMPREPLY[*]}"
            "; COMPREPLY=(); _stepscope_complete_value compare --format ''; echo ${COMPREPLY[*]}")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    if p.returncode != 0:
        fail("sourcing the completion: %s" % p.stderr)
        return None
    out = p.stdout.split("\n")
    result = {"commands": set(out[0].split()), "top": set(out[1].split())}
    for k, c in enumerate(COMMANDS):
        result[c] = set(out[2 + k].split())
    result["report formats"] = set(out[2 + len(COMMANDS)].split())
    result["compare formats"] = set(out[3 + len(COMMANDS)].split())
    return result


def cli_md_sections():
    """{command: section text} of docs/cli.md's `## stepscope CMD` sections."""
    text = read("docs/cli.md")
    out = {}
    parts = re.split(r"^## ", text, flags=re.M)
    for part in parts[1:]:
        m = re.match(r"`stepscope (\w+)", part)
        if m:
            out.setdefault(m.group(1), "")
            out[m.group(1)] += part
    return text, out


def md_options(text):
    """Options named in backquotes, and those heading table rows."""
    named = set()
    for code in re.findall(r"`([^`]*)`", text):
        named |= set(re.findall(r"(?<![\w-])(--?[a-zA-Z][-\w]*)", code))
    table = set()
    for row in re.findall(r"^\| `([^`]*)` \|", text, re.M):
        table |= set(re.findall(r"(?<![\w-])(--?[a-zA-Z][-\w]*)", row))
    return named, table


def code_file_names():
    """File names the code writes: literals such as "report.json",
    "report-%d.json", "%s/records", "%s/%d-%d.sps"."""
    names = set()
    files = []
    for pattern in ("src/**/*.[ch]", "tools/**/*.[ch]", "python/stepscope/*.py", "python/src/*.[ch]"):
        files += glob.glob(os.path.join(SRC, pattern), recursive=True)
    for path in files:
        rel = os.path.relpath(path, SRC)
        # the readers of /proc and /sys name the files they read
        readers = rel.startswith("src/sources/") or re.match(r"src/platform/linux/source_", rel)
        with open(path, encoding="utf-8") as f:
            src = f.read()
        for lit in re.findall(r'"([^"\\\s]*)"', src):
            if re.fullmatch(r"[\w%.-]*[a-z][\w%.-]*\.(json|jsonl|html|csv|bin|tsv|sps|tfevents)", lit):
                names.add(lit)
            elif not readers and re.fullmatch(r"%s/[\w%.-]*[a-z]{2}[\w%.-]*", lit) and ".tmp" not in lit:
                names.add(lit[3:])
    return names


def env_variables():
    names = set()
    files = []
    for pattern in ("src/**/*.[ch]", "tools/**/*.[ch]", "python/**/*.py", "python/**/*.[ch]"):
        files += glob.glob(os.path.join(SRC, pattern), recursive=True)
    for path in files:
        if "/tests/" in path:
            continue
        with open(path, encoding="utf-8") as f:
            names |= set(re.findall(r"\bSTEPSCOPE_[A-Z0-9_]+\b", f.read()))
    return {n for n in names if n != "STEPSCOPE_H"}  # the header's include guard


def check_bare():
    """Bare `stepscope`: a short usage on stderr (the usage line, every
    command with a few words, where the rest is), exit 2, not --help's
    whole text."""
    p = subprocess.run([STEPSCOPE], capture_output=True, text=True)
    lines = p.stderr.rstrip("\n").split("\n")
    if p.returncode != 2 or p.stdout:
        fail("bare stepscope: exit %d (2 expected), stdout %r" % (p.returncode, p.stdout))
    if len(lines) > 12:
        fail("bare stepscope: %d lines on stderr, at most 12 expected" % len(lines))
    if not lines[0].startswith("usage: stepscope <command>"):
        fail("bare stepscope: the first line is not the usage: %r" % lines[0])
    for cmd in COMMANDS:
        if not any(re.match(r"  %s\b" % cmd, line) for line in lines):
            fail("bare stepscope: no line for the command %s" % cmd)
    for needed in ("stepscope --help", "stepscope help COMMAND"):
        if needed not in p.stderr:
            fail("bare stepscope: does not say %r" % needed)
    for line in lines:
        if len(line) > 80:
            fail("bare stepscope: a line over 80 columns: %r" % line)


def check_help():
    """Parser against --help, and --help's metavariables.  Returns
    ({command: {option: metavar}}, {command: [lines]}); "" is the bare
    stepscope."""
    main_cmds, main_opts = main_commands_and_options()
    if set(main_cmds) != set(COMMANDS):
        fail("main.c dispatches %s, this test knows %s" % (sorted(main_cmds), COMMANDS))

    helps, help_lines, parsed = {}, {}, {}
    for cmd in [""] + COMMANDS:
        helps[cmd] = help_text(cmd)
        parsed[cmd], help_lines[cmd] = parse_help(cmd, helps[cmd])
    # the bare command's options: its own block
    check_same("stepscope", "main.c", main_opts, "stepscope --help", set(parsed[""]))

    for cmd in COMMANDS:
        parser = parser_options(PARSERS[cmd])
        check_same(cmd, PARSERS[cmd], parser, "stepscope %s --help" % cmd, set(parsed[cmd]))
        # usage line metavariables = option list's
        for opt, meta in usage_metavars(help_lines[cmd][0] + "\n" + "\n".join(help_lines[cmd][1:3])).items():
            if opt in parsed[cmd] and parsed[cmd][opt] != meta:
                fail("stepscope %s --help: the usage line says %s %s, the options %s %s"
                     % (cmd, opt, meta, opt, parsed[cmd][opt]))
    # the top-level help's command lines
    for line in help_lines[""]:
        m = re.match(r"^  (\w+) (.*)$", line)
        if m and m.group(1) in COMMANDS:
            for opt, meta in usage_metavars(m.group(2)).items():
                if parsed[m.group(1)].get(opt) != meta:
                    fail("stepscope --help: '%s %s' for %s, whose --help says %s %s"
                         % (opt, meta, m.group(1), opt, parsed[m.group(1)].get(opt)))
    # one long option, one metavariable, whatever the command (but -o,
    # --output: run's DIR, report's OUT file or directory, merge's OUT)
    seen = {}
    for cmd in COMMANDS:
        for opt, meta in parsed[cmd].items():
            if opt.startswith("--") and meta and opt != "--output":
                if opt in seen and seen[opt][1] != meta:
                    fail("%s takes %s in %s, %s in %s" % (opt, seen[opt][1], seen[opt][0], meta, cmd))
                seen.setdefault(opt, (cmd, meta))
    return parsed, help_lines


def check_man_options(man_src, sections, parsed):
    """The man page's commands, options and metavariables against --help."""
    man_src = read("docs/stepscope.1")
    sections = man_sections(man_src)
    for need in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS",
                 "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"):
        if need not in sections:
            fail("docs/stepscope.1 has no %s section" % need)
    version = subprocess.run([STEPSCOPE, "--version"], capture_output=True, text=True).stdout.split()
    th = re.search(r'^\.TH STEPSCOPE 1 "[^"]*" "stepscope ([^"]+)"', man_src, re.M)
    if not th or not version or th.group(1) != version[-1]:
        fail("docs/stepscope.1's .TH names version %s, stepscope --version %s"
             % (th.group(1) if th else None, version))
    # an example's line fits a terminal of 80 columns after the 7 of the indent
    example = False
    for n, line in enumerate(man_src.split("\n"), 1):
        example = (example or line.startswith(".EX")) and not line.startswith(".EE")
        if example and not line.startswith(".") and len(roff_inline(line).replace("\\e", "\\")) > 72:
            fail("docs/stepscope.1 line %d: an example line over 72 columns: %r" % (n, line))
    synopsis = [roff_line(x) for x in sections.get("SYNOPSIS", [])]
    by_cmd = man_command_sections(sections.get("COMMANDS", []))
    for cmd in COMMANDS + ["help"]:
        if not any(re.match(r"^stepscope %s\b" % cmd, s) for s in synopsis):
            fail("docs/stepscope.1: %s is not in SYNOPSIS" % cmd)
        if cmd not in by_cmd:
            fail("docs/stepscope.1: %s has no subsection in COMMANDS" % cmd)
    man_top = {}
    for tag, _ in man_tp_entries(sections.get("OPTIONS", [])):
        man_top.update(tag_options(tag))
    check_same("stepscope", "stepscope --help", set(parsed[""]), "docs/stepscope.1 OPTIONS", set(man_top))
    for cmd in COMMANDS:
        man_opts = {}
        for tag, _ in man_tp_entries(by_cmd.get(cmd, [])):
            man_opts.update(tag_options(tag))
        check_same(cmd, "stepscope %s --help" % cmd, set(parsed[cmd]),
                   "docs/stepscope.1", set(man_opts))
        for opt, meta in man_opts.items():
            want = parsed[cmd].get(opt)
            if opt in parsed[cmd] and set((want or "").split("|")) != set((meta or "").split("|")):
                fail("%s %s: docs/stepscope.1 says %s, --help %s" % (cmd, opt, meta, want))
        # the synopsis' metavariables
        for s in synopsis:
            if re.match(r"^stepscope %s\b" % cmd, s):
                for opt, meta in usage_metavars(s).items():
                    if parsed[cmd].get(opt, meta) != meta:
                        fail("docs/stepscope.1 SYNOPSIS: %s %s %s, --help %s"
                             % (cmd, opt, meta, parsed[cmd].get(opt)))
    return by_cmd


def check_man_exit_statuses(sections, help_lines):
    # exit statuses
    exits = dict((tag, body) for tag, body in man_tp_entries(sections.get("EXIT STATUS", [])))
    all_man_exit = " ".join(exits.values())
    for cmd in COMMANDS:
        codes = exit_codes(exit_paragraph(help_lines[cmd]))
        if not codes:
            fail("stepscope %s --help gives no exit status" % cmd)
        body = exits.get(cmd)
        if body is None:
            fail("docs/stepscope.1 EXIT STATUS has no entry for %s" % cmd)
            continue
        for code in sorted(codes - exit_codes(body)):
            fail("exit status %s of stepscope %s --help is not in the man page's EXIT STATUS"
                 % (code, cmd))
    for code in sorted(exit_codes(exit_paragraph(help_lines[""]))):
        if code not in exit_codes(all_man_exit):
            fail("exit status %s of stepscope --help is not in the man page's EXIT STATUS" % code)


def check_man_files_and_environment(sections):
    # files
    files_text = " ".join(roff_line(x) for x in sections.get("FILES", []))
    names = code_file_names()
    if "report.json" not in names or "records" not in names:
        fail("found no output file names in the code (%s): the scan is broken" % sorted(names))
    for name in sorted(names):
        regex = re.sub(r"%\w+", "\0", name)
        regex = re.escape(regex).replace("\0", r"[\w*]+")
        if not re.search(r"(?<![\w.-])" + regex + r"(?![\w-])", files_text):
            fail("the code writes %s; docs/stepscope.1 FILES does not name it" % name)

    # environment
    env_text = " ".join(roff_line(x) for x in sections.get("ENVIRONMENT", []))
    variables = env_variables()
    if len(variables) < 10:
        fail("found only %s STEPSCOPE_ variables in the code: the scan is broken" % sorted(variables))
    for v in sorted(variables):
        if not re.search(r"\b%s\b" % v, env_text):
            fail("the code reads %s; docs/stepscope.1 ENVIRONMENT does not name it" % v)


def check_report_formats(by_cmd):
    """Returns the report formats and compare's, as the parsers know them."""
    # report formats: the parser's, in the man page and the completion
    fmt_src = read("src/render/export_dir.c")
    m = re.search(r"format_names\[[^\]]*\]\s*=\s*\{([^}]*)\}", fmt_src)
    report_formats = set(re.findall(r'"(\w+)"', m.group(1))) if m else set()
    if not report_formats:
        fail("src/render/export_dir.c: no format_names to read the report formats from")
    report_man = " ".join(body for tag, body in man_tp_entries(by_cmd.get("report", []))
                          if tag.startswith("--format"))
    for f in sorted(report_formats):
        if not re.search(r"\b%s\b" % f, report_man):
            fail("report --format %s is not in docs/stepscope.1" % f)
    compare_formats = set(re.findall(r'strcmp\(v, "(\w+)"\)', read(PARSERS["compare"]))) - {"slower"}
    return report_formats, compare_formats


def check_completion(parsed, report_formats, compare_formats):
    comp = completion_lists()
    if comp:
        check_same("commands", "main.c", set(COMMANDS) | {"help"}, "the completion", comp["commands"])
        check_same("stepscope", "stepscope --help", set(parsed[""]), "the completion", comp["top"])
        for cmd in COMMANDS:
            offered = set(parsed[cmd]) - DEPRECATED.get(cmd, set())
            check_same(cmd, "stepscope %s --help" % cmd, offered, "the completion", comp[cmd])
            # an option's value is never taken for the next option or COMMAND
            with_value = {o for o, meta in parsed[cmd].items() if meta}
            check_same(cmd + ": options with a value", "stepscope %s --help" % cmd, with_value,
                       "the completion", completion_takes_value(cmd, set(parsed[cmd])))
            for d in sorted(DEPRECATED.get(cmd, set()) - set(parsed[cmd])):
                fail("%s %s is no longer in --help: drop it from DEPRECATED" % (cmd, d))
        check_same("report --format", "the parser", report_formats,
                   "the completion", comp["report formats"])
        check_same("compare --format", "the parser", compare_formats - {"md"},  # md: markdown's alias
                   "the completion", comp["compare formats"])


def check_cli_md(parsed):
    md_text, md = cli_md_sections()
    synopsis_block = md_text.split("```")[1] if "```" in md_text else ""
    for cmd in COMMANDS:
        if not re.search(r"^stepscope %s\b" % cmd, synopsis_block, re.M):
            fail("docs/cli.md's synopsis has no stepscope %s" % cmd)
        if cmd not in md:
            fail("docs/cli.md has no section for stepscope %s" % cmd)
            continue
        named, table = md_options(md[cmd])
        for opt in sorted(set(parsed[cmd]) - named):
            fail("docs/cli.md's section of %s does not name %s" % (cmd, opt))
        for opt in sorted(table - set(parsed[cmd])):
            fail("docs/cli.md's table of %s has %s, which stepscope %s --help does not" % (cmd, opt, cmd))
    for opt in ("--help", "--version"):
        if opt not in synopsis_block:
            fail("docs/cli.md's synopsis has no stepscope %s" % opt)


def check_rendering():
    """groff, mandoc and lexgrog on the page.  Returns the tools missing."""
    missing = []
    if shutil.which("groff"):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", os.path.join(SRC, "docs/stepscope.1")],
                           capture_output=True, text=True)
        if p.returncode != 0 or p.stderr.strip():
            fail("groff -man -ww: %s" % p.stderr.strip())
    else:
        missing.append("groff (Debian package groff-base)")
    if shutil.which("mandoc"):
        p = subprocess.run(["mandoc", "-Tlint", "-Wwarning", os.path.join(SRC, "docs/stepscope.1")],
                           capture_output=True, text=True)
        if p.returncode != 0 or p.stdout.strip() or p.stderr.strip():
            fail("mandoc -Tlint: %s%s" % (p.stdout.strip(), p.stderr.strip()))
    else:
        missing.append("mandoc (Debian package mandoc)")

    # man-db's whatis entry (apropos, man -k) from the NAME section
    if shutil.which("lexgrog"):
        p = subprocess.run(["lexgrog", os.path.join(SRC, "docs/stepscope.1")], capture_output=True, text=True)
        if p.returncode != 0 or '"stepscope - ' not in p.stdout:
            fail("lexgrog (man-db) finds no whatis entry: %s%s" % (p.stdout.strip(), p.stderr.strip()))
    else:
        missing.append("lexgrog (Debian package man-db)")
    return missing


def main():
    check_bare()
    parsed, help_lines = check_help()
    man_src = read("docs/stepscope.1")
    sections = man_sections(man_src)
    by_cmd = check_man_options(man_src, sections, parsed)
    check_man_exit_statuses(sections, help_lines)
    check_man_files_and_environment(sections)
    report_formats, compare_formats = check_report_formats(by_cmd)
    check_completion(parsed, report_formats, compare_formats)
    check_cli_md(parsed)
    missing = check_rendering()

    print("cli_docs: %d failures" % len(failures))
    if failures:
        return 1
    if missing:
        print("SKIP: the man page was not rendered: no %s (scripts/install-deps.sh installs it)"
              % " and no ".join(missing))
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
