#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when the restorer's final stage (section cxlpool_restorer of the
archive given) has a relocation: that code runs from a copy placed anywhere,
after the restorer's own mappings are gone, so it may reach nothing outside
itself (no libc, no .rodata, no GOT)."""
import subprocess
import sys

out = subprocess.run(["readelf", "-rW", sys.argv[1]], check=True, capture_output=True, text=True).stdout
in_section = False
bad = []
for line in out.splitlines():
    if line.startswith("Relocation section"):
        in_section = "'.relacxlpool_restorer'" in line or "'.rela.cxlpool_restorer'" in line
        continue
    if in_section and line.strip() and not line.lstrip().startswith("Offset"):
        bad.append(line.strip())
if "cxlpool_restorer" not in subprocess.run(["readelf", "-SW", sys.argv[1]], check=True, capture_output=True,
                                            text=True).stdout:
    print("no cxlpool_restorer section in", sys.argv[1])
    sys.exit(1)
for b in bad:
    print("relocation in the final stage:", b)
sys.exit(1 if bad else 0)
