"""The C source lists the pip build compiles, read from CMakeLists.txt.

CMake is the one place the lists are written: this module follows a
target's sources (plain .c files, ${VAR} lists set with set(), and
$<TARGET_OBJECTS:lib>) and the libraries it links (target_link_libraries
naming another target of the project, transitively), so that a file
added to a CMake target is built by `pip install` too.  Anything it cannot
follow (a variable never set, a generator expression other than
TARGET_OBJECTS, a source that does not exist) stops the build with one
clear line rather than building something different from CMake.
"""
import os
import re


LIBRARY_KINDS = ("STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "ALIAS", "IMPORTED")


class CMakeParseError(Exception):
    pass


def _strip_comments(text):
    # CMake comments run from an unquoted # to the end of the line; the
    # files read here have no # inside strings
    return re.sub(r"#[^\n]*", "", text)


class CMakeLists:
    """The targets of one or more CMakeLists.txt files, each file's
    relative paths made relative to root."""

    def __init__(self, root, files):
        self.root = root
        self.vars = {}
        self.targets = {}  # name -> (kind, [tokens], directory)
        self.links = {}  # name -> [tokens]
        self.aliases = {}  # alias (stepscope::stepscope) -> target
        for rel in files:
            path = os.path.join(root, rel)
            try:
                with open(path) as f:
                    text = _strip_comments(f.read())
            except OSError as e:
                raise CMakeParseError("cannot read %s: %s" % (path, e.strerror))
            self._parse(text, os.path.dirname(rel))

    def _parse(self, text, subdir):
        for m in re.finditer(r"\bset\(\s*(\w+)\s+([^)]*)\)", text):
            self.vars.setdefault(m.group(1), (m.group(2).split(), subdir))
        for m in re.finditer(r"\badd_(library|executable)\(\s*([\w:-]+)\s*([^)]*(?:\$<[^>]*>[^)]*)*)\)", text):
            tokens = m.group(3).split()
            kind = "EXECUTABLE"
            if m.group(1) == "library":
                kind = tokens.pop(0) if tokens and tokens[0] in LIBRARY_KINDS else "STATIC"
            if kind == "ALIAS":
                self.aliases[m.group(2)] = tokens[0] if tokens else ""
            elif kind != "IMPORTED" and "IMPORTED" not in tokens:
                self.targets[m.group(2)] = (kind, tokens, subdir)
        for m in re.finditer(r"\btarget_link_libraries\(\s*([\w-]+)\s+([^)]*)\)", text):
            self.links.setdefault(m.group(1), []).extend(
                t for t in m.group(2).split() if t not in ("PRIVATE", "PUBLIC", "INTERFACE"))

    def _expand(self, tokens, subdir, where):
        out = []
        for t in tokens:
            m = re.fullmatch(r"\$\{(\w+)\}", t)
            if m:
                if m.group(1) not in self.vars:
                    raise CMakeParseError("%s names ${%s}, which no set() defines" % (where, m.group(1)))
                vtokens, vdir = self.vars[m.group(1)]
                out.extend(self._expand(vtokens, vdir, "${%s}" % m.group(1)))
                continue
            m = re.fullmatch(r"\$<TARGET_OBJECTS:([\w-]+)>", t)
            if m:
                out.extend(self.sources(m.group(1)))
                continue
            if t.startswith("$") or "${" in t:
                raise CMakeParseError("%s: cannot follow %r" % (where, t))
            if not t.endswith(".c"):
                raise CMakeParseError("%s: %r is not a C source" % (where, t))
            rel = os.path.normpath(os.path.join(subdir, t))
            if not os.path.isfile(os.path.join(self.root, rel)):
                raise CMakeParseError("%s lists %s, which does not exist" % (where, rel))
            out.append(rel)
        return out

    def sources(self, target):
        """The target's own C sources (paths relative to root), in order."""
        target = self.aliases.get(target, target)
        if target not in self.targets:
            raise CMakeParseError("no add_library/add_executable(%s ...) found" % target)
        kind, tokens, subdir = self.targets[target]
        files = self._expand(tokens, subdir, target)
        if not files and kind != "INTERFACE":
            raise CMakeParseError("%s has no C sources" % target)
        return files

    def _link_items(self, tokens):
        for t in tokens:
            m = re.fullmatch(r"\$\{(\w+)\}", t)
            if m and m.group(1) in self.vars:
                yield from self._link_items(self.vars[m.group(1)][0])
            else:
                yield t  # ${CMAKE_DL_LIBS} and the like: CMake's own

    def closure(self, target):
        """The sources of target and of every project library it links,
        transitively (each file once), and the link items that are not
        project targets (PkgConfig::JANSSON, m, ${CMAKE_DL_LIBS}, ...)."""
        files, external, seen = [], [], set()

        def visit(name):
            name = self.aliases.get(name, name)
            if name in seen:
                return
            seen.add(name)
            for f in self.sources(name):
                if f not in files:
                    files.append(f)
            for dep in self._link_items(self.links.get(name, [])):
                if self.aliases.get(dep, dep) in self.targets:
                    visit(dep)
                elif dep not in external:
                    external.append(dep)

        visit(target)
        return files, external
