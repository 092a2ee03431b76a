"""The platform tag a Linux wheel's ELF files justify, as auditwheel
would judge it (PEP 600): `manylinux_2_Y_ARCH` when every ELF file needs
only libraries of the manylinux policy (libc, libm, libdl, libpthread,
librt, the dynamic loader, ...) and glibc symbol versions up to 2.Y;
otherwise plain `linux_ARCH`, which promises nothing beyond this machine.

The ELF reading is done here (the dynamic section's DT_NEEDED, DT_RPATH
and DT_RUNPATH, and the GNU version-needs section), with no tool beyond
Python: the build must not depend on binutils' output format.

    python3 elf_tag.py ARCH FILE...    prints the tag and why
"""
import os
import re
import struct
import sys

# The libraries every manylinux policy lets a wheel use from the system
# (auditwheel's policy.json, the parts a C program can need), by soname.
MANYLINUX_LIBS = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
    "libnsl.so.1", "libresolv.so.2", "libgcc_s.so.1", "libcrypt.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld-linux.so.2", "ld64.so.2", "ld64.so.1",
    "ld-linux-armhf.so.3",
}

SHT_DYNAMIC, SHT_GNU_VERNEED = 6, 0x6FFFFFFE
DT_NEEDED, DT_RPATH, DT_RUNPATH = 1, 15, 29


class ElfError(Exception):
    pass


class ElfInfo:
    """What a wheel's tag depends on in one ELF file."""

    def __init__(self, path):
        self.path = path
        self.needed = []  # DT_NEEDED sonames
        self.rpaths = []  # DT_RPATH and DT_RUNPATH strings
        self.versions = {}  # soname -> set of version names needed from it
        with open(path, "rb") as f:
            self._read(f.read())

    def _read(self, data):
        if data[:4] != b"\x7fELF":
            raise ElfError("%s: not an ELF file" % self.path)
        is64 = data[4] == 2
        end = "<" if data[5] == 1 else ">"
        if is64:
            shoff, = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
            sh_fmt = end + "IIQQQQIIQQ"
        else:
            shoff, = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
            sh_fmt = end + "IIIIIIIIII"
        sections = []
        for i in range(shnum):
            # name, type, flags, addr, offset, size, link, info, align, entsize
            sections.append(struct.unpack_from(sh_fmt, data, shoff + i * shentsize))

        def strtab_at(index, off):
            base = sections[index][4]
            stop = data.index(b"\0", base + off)
            return data[base + off:stop].decode("utf-8", "replace")

        dyn_fmt = end + ("qQ" if is64 else "iI")
        dyn_size = struct.calcsize(dyn_fmt)
        for s in sections:
            if s[1] == SHT_DYNAMIC:
                for off in range(s[4], s[4] + s[5], dyn_size):
                    tag, val = struct.unpack_from(dyn_fmt, data, off)
                    if tag == 0:
                        break
                    if tag == DT_NEEDED:
                        self.needed.append(strtab_at(s[6], val))
                    elif tag in (DT_RPATH, DT_RUNPATH):
                        self.rpaths.append(strtab_at(s[6], val))
            elif s[1] == SHT_GNU_VERNEED:
                off, count = s[4], s[7]  # sh_info: the number of entries
                for _ in range(count):
                    _, cnt, file_off, aux, nxt = struct.unpack_from(end + "HHIII", data, off)
                    names = self.versions.setdefault(strtab_at(s[6], file_off), set())
                    a = off + aux
                    for _ in range(cnt):
                        _, _, _, name_off, anext = struct.unpack_from(end + "IHHII", data, a)
                        names.add(strtab_at(s[6], name_off))
                        a += anext
                    off += nxt


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def platform_tag(paths, arch):
    """(tag, [reasons]) for a wheel holding the ELF files paths, built for
    arch (x86_64, aarch64, ...): manylinux_2_Y_arch, or linux_arch with the
    reasons it cannot be manylinux."""
    why_not, glibc = [], (2, 5)
    for p in paths:
        info = ElfInfo(p)
        name = os.path.basename(p)
        for lib in info.needed:
            if lib not in MANYLINUX_LIBS:
                why_not.append("%s needs %s, which is not in the manylinux policy" % (name, lib))
        # a run path that is not relative to the file ($ORIGIN) names a
        # directory of the machine it was built on
        for rpath in info.rpaths:
            for d in rpath.split(":"):
                if d and not d.startswith(("$ORIGIN", "${ORIGIN}")):
                    why_not.append("%s has the run path %s, a directory of the build machine" % (name, d))
        for lib, names in sorted(info.versions.items()):
            for v in sorted(names):
                m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", v)
                if m:
                    glibc = max(glibc, (int(m.group(1)), int(m.group(2))))
                elif not v.startswith("GCC_"):
                    why_not.append("%s needs symbol version %s of %s" % (name, v, lib))
    if why_not:
        return "linux_%s" % arch, why_not
    return "manylinux_%d_%d_%s" % (glibc[0], glibc[1], arch), []


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: elf_tag.py ARCH FILE...\n")
        return 2
    try:
        tag, why = platform_tag(argv[2:], argv[1])
    except (OSError, ElfError, struct.error) as e:
        sys.stderr.write("elf_tag.py: %s\n" % e)
        return 1
    print(tag)
    for w in why:
        print("  " + w)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
