# SPDX-License-Identifier: Apache-2.0
# What the checkpoint benches read from cxlpool-restore's stderr.
import re


def restored_ms(proc, image):
    """The restore latency cxlpool-restore reports for its next clone, or
    (None, the line that says why it failed)."""
    while True:
        line = proc.stderr.readline()
        m = re.search(r"restored in ([0-9.]+) ms", line)
        if m:
            return float(m.group(1)), ""
        if not line or "cannot restore" in line or "of " + image in line:
            proc.kill()
            return None, line.strip()
