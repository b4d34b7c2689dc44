#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the layering rule of docs/architecture.md on the source tree.

Usage: check_layering.py SOURCE_ROOT

Reads every .cpp/.hpp/.h under lib/ and every meson.build of the tree, and
prints one line per violation, FILE:LINE: what is wrong. Exit status 1 when
there is any, 0 otherwise. Nothing is listed by hand: which headers belong
to drivers/, cuda/, daemon/ and tools/, which source lists belong to which
module, and which meson variables carry drivers are all found by scanning.

  lib-includes-driver   lib/ includes a header that lives in drivers/ or
                        cuda/ (backends are reached through lib/hal only)
  lib-includes-vendor   lib/ includes a vendor library's header
  lib-includes-program  lib/ includes a header of daemon/ or tools/
  lib-includes-private  a lib/ module includes another module's src/ or
                        internal/ header
  driver-sdk            cxlpool/hal/driver/*.hpp is included in lib/ outside
                        lib/hal's sources and the driver SDK itself (public
                        headers, users and other modules include
                        cxlpool/hal/backend_registry.hpp instead)
  meson-outside-module  a meson.build under lib/X names a path outside lib/X
                        ('../' into another module, the project root)
  meson-foreign-sources a meson.build under lib/X uses a source list (or an
                        include directory into src/ or internal/) that
                        another module's meson.build defines
  meson-picks-driver    a meson.build under lib/ other than libcxlpool's link
                        step (lib/client/meson.build) names a variable that
                        drivers/ or cuda/ define (or one built from them)
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h")
HEADER_SUFFIXES = (".hpp", ".h", ".cuh", ".inc")

VENDOR_PATTERNS = [re.compile(p) for p in (
    r"numa\.h", r"numaif\.h", r"liburing\.h", r"liburing/.*", r"libaio\.h", r"rte_.*\.h",
    r"infiniband/.*", r"rdma/.*", r"cuda.*\.h", r"daxctl/.*", r"cxl/.*", r"libcxl\.h", r"systemd/.*",
)]

# The one meson.build allowed to choose drivers: libcxlpool's link step.
LINK_STEP = "lib/client/meson.build"
DRIVER_SDK = "cxlpool/hal/driver/"
DRIVER_SDK_USERS = ("lib/hal/src/", "lib/hal/include/cxlpool/hal/driver/")

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
ASSIGN_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\+=|=)(?!=)\s*(.*)$")
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ROOT_CALL_RE = re.compile(r"\bmeson\s*\.\s*(project_source_root|global_source_root|source_root)\s*\(")


class Violation:
    def __init__(self, path, line, rule, message):
        self.path, self.line, self.rule, self.message = path, line, rule, message

    def __str__(self):
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


def walk(root, top, suffixes):
    """Relative paths (with '/') of the files under root/top ending in one of
    `suffixes` (None: every file)."""
    out = []
    base = os.path.join(root, top)
    for dirpath, dirnames, filenames in os.walk(base):
        # Hidden folders and build trees (anything meson configured) are not sources.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and
                             not os.path.isdir(os.path.join(dirpath, d, "meson-private")))
        for name in sorted(filenames):
            if suffixes is None or name.endswith(suffixes):
                out.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return out


def module_of(rel):
    """'lib/client/src/x.cpp' -> 'lib/client'; None outside lib/<module>/."""
    parts = rel.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 and parts[0] == "lib" else None


class Tree:
    def __init__(self, root):
        self.root = root
        self.lib_sources = walk(root, "lib", SOURCE_SUFFIXES)
        self.lib_files = set(walk(root, "lib", None))  # everything, for include resolution
        self.meson_files = walk(root, ".", ("meson.build",))
        self.modules = sorted({module_of(p) for p in self.lib_files if module_of(p)})
        # Header path -> owner, for every header outside lib/ that lib/ must not reach.
        self.foreign_headers = {}
        for top, rule in (("drivers", "lib-includes-driver"), ("cuda", "lib-includes-driver"),
                          ("daemon", "lib-includes-program"), ("tools", "lib-includes-program")):
            for h in walk(root, top, HEADER_SUFFIXES):
                self.foreign_headers[h] = rule
        # Private headers of each module (src/, internal/).
        self.private_headers = {}
        for h in self.lib_files:
            parts = h.split("/")
            if h.endswith(HEADER_SUFFIXES) and len(parts) > 3 and parts[2] in ("src", "internal"):
                self.private_headers[h] = module_of(h)

    def exists(self, rel):
        return rel in self.lib_files

    def resolves_in_lib(self, including, target):
        """True when `target` names a file the including module may use: next
        to the includer or in a folder above it within its module, in the
        module's include/ or internal/, or in any module's public include/."""
        module = module_of(including)
        d = os.path.dirname(including)
        while True:
            if self.exists(os.path.normpath(os.path.join(d, target)).replace(os.sep, "/")):
                return True
            if d == module or "/" not in d:
                break
            d = os.path.dirname(d)
        for public in [f"{m}/include" for m in self.modules] + [f"{module}/internal"]:
            if self.exists(f"{public}/{target}"):
                return True
        return False


def tail_matches(path, target):
    """True when `target` (an include as written, '../' stripped) names the
    file `path` by its last components."""
    while target.startswith("../") or target.startswith("./"):
        target = target.split("/", 1)[1]
    return path == target or path.endswith("/" + target)


def check_includes(tree, out):
    for rel in tree.lib_sources:
        with open(os.path.join(tree.root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        module = module_of(rel)
        for number, text in enumerate(lines, 1):
            m = INCLUDE_RE.match(text)
            if not m:
                continue
            target = m.group(2).strip()
            written = f"#include {m.group(1)}{target}{'>' if m.group(1) == '<' else chr(34)}"
            if any(p.fullmatch(target) for p in VENDOR_PATTERNS):
                out.append(Violation(rel, number, "lib-includes-vendor",
                                     f"{written}: vendor headers belong in drivers/ and cuda/"))
                continue
            if target.startswith(DRIVER_SDK) and not rel.startswith(DRIVER_SDK_USERS):
                out.append(Violation(rel, number, "driver-sdk",
                                     f"{written}: the driver SDK is for drivers and lib/hal; "
                                     "use cxlpool/hal/backend_registry.hpp"))
                continue
            if tree.resolves_in_lib(rel, target):
                continue
            for header, rule in tree.foreign_headers.items():
                if tail_matches(header, target):
                    out.append(Violation(rel, number, rule, f"{written} is {header}"))
                    break
            else:
                for header, owner in tree.private_headers.items():
                    if owner != module and tail_matches(header, target):
                        out.append(Violation(rel, number, "lib-includes-private",
                                             f"{written} is {header}, private to {owner}"))
                        break


def meson_tokens(text):
    """(line, kind, value) per string literal ('str') and identifier ('id')
    of a meson.build, comments dropped."""
    tokens = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("'''", i):
            end = text.find("'''", i + 3)
            end = n if end < 0 else end
            tokens.append((line, "str", text[i + 3:end]))
            line += text.count("\n", i, end)
            i = end + 3
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            tokens.append((line, "str", text[i + 1:j]))
            i = j + 1
        elif c.isalpha() or c == "_":
            m = IDENT_RE.match(text, i)
            tokens.append((line, "id", m.group(0)))
            i = m.end()
        else:
            i += 1
    return tokens


def code_lines(text):
    """Each line of a meson.build with its comment and strings blanked."""
    out = []
    for raw in text.splitlines():
        line, quote = [], False
        for c in raw:
            if c == "'":
                quote = not quote
                line.append(c)
            elif quote:
                line.append(" ")
            elif c == "#":
                break
            else:
                line.append(c)
        out.append("".join(line))
    return out


def assignments(text):
    """(line, name, right-hand side) per assignment of a meson.build."""
    result = []
    for number, line in enumerate(code_lines(text), 1):
        m = ASSIGN_RE.match(line)
        if m:
            result.append((number, m.group(1), m.group(3)))
    return result


def read(tree, rel):
    with open(os.path.join(tree.root, rel), encoding="utf-8") as f:
        return f.read()


def check_meson(tree, out):
    texts = {rel: read(tree, rel) for rel in tree.meson_files}
    lib_meson = [rel for rel in tree.meson_files if module_of(rel)]

    # A module's own build inputs: source lists (files(...)) and include
    # directories into its src/ or internal/ belong to the module that
    # assigns them.
    private_vars = {}
    for rel in lib_meson:
        text = texts[rel]
        for number, name, rhs in assignments(text):
            rhs = rhs.replace(" ", "")
            if "files(" in rhs:
                private_vars.setdefault(name, (module_of(rel), rel, number, "source list"))
            elif "include_directories(" in rhs:
                source_line = text.splitlines()[number - 1]
                if re.search(r"include_directories\(\s*'(\./)?(src|internal)\b", source_line):
                    private_vars.setdefault(name, (module_of(rel), rel, number, "private include directory"))

    # Variables that carry drivers: assigned in drivers/ or cuda/, or elsewhere
    # outside lib/ from one that does (all_backends_dep).
    lib_assigned = {name for rel in lib_meson for _, name, _ in assignments(texts[rel])}
    driver_vars = {}
    for rel in tree.meson_files:
        if rel.startswith(("drivers/", "cuda/")):
            for number, name, _ in assignments(texts[rel]):
                if name not in lib_assigned:
                    driver_vars.setdefault(name, f"{rel}:{number}")
    others = [rel for rel in tree.meson_files if not module_of(rel) and not rel.startswith(("drivers/", "cuda/"))]
    grew = True
    while grew:
        grew = False
        for rel in others:
            for number, name, rhs in assignments(texts[rel]):
                if name in driver_vars or name in lib_assigned:
                    continue
                if any(t in driver_vars for t in IDENT_RE.findall(rhs)):
                    driver_vars[name] = f"{rel}:{number}"
                    grew = True

    for rel in lib_meson:
        module = module_of(rel)
        folder = os.path.dirname(rel)
        text = texts[rel]
        for number, line in enumerate(code_lines(text), 1):
            m = ROOT_CALL_RE.search(line)
            if m:
                out.append(Violation(rel, number, "meson-outside-module",
                                     f"meson.{m.group(1)}(): a module names only paths inside {module}"))
        for number, kind, value in meson_tokens(text):
            if kind == "str":
                if value.startswith("../") or "/../" in value or value == "..":
                    resolved = os.path.normpath(os.path.join(folder, value)).replace(os.sep, "/")
                    if resolved != module and not resolved.startswith(module + "/"):
                        out.append(Violation(rel, number, "meson-outside-module",
                                             f"'{value}' is {resolved}, outside {module}"))
                continue
            owner = private_vars.get(value)
            if owner and owner[0] != module:
                out.append(Violation(rel, number, "meson-foreign-sources",
                                     f"{value} is {owner[0]}'s {owner[3]} ({owner[1]}:{owner[2]}); "
                                     "link that module's library instead"))
            if value in driver_vars and rel != LINK_STEP:
                out.append(Violation(rel, number, "meson-picks-driver",
                                     f"{value} ({driver_vars[value]}) chooses backends; only {LINK_STEP} does"))


def check(root):
    tree = Tree(root)
    violations = []
    check_includes(tree, violations)
    check_meson(tree, violations)
    violations.sort(key=lambda v: (v.path, v.line, v.rule))
    return tree, violations


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: check_layering.py SOURCE_ROOT")
    tree, violations = check(argv[1])
    for v in violations:
        print(v)
    checked = f"{len(tree.lib_sources)} sources under lib/, {len(tree.meson_files)} meson.build files"
    if violations:
        print(f"layering: {len(violations)} violation(s) in {checked} (docs/architecture.md, "
              "\"Folder map and layering rule\")")
        return 1
    print(f"layering: no violations in {checked}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
