#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_layering.py against a small tree written here: every kind of
violation is reported at its file and line, and what the rule allows
(a module's own headers, public headers, lib/hal's use of its driver SDK,
libcxlpool's link step naming drivers) is not."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layering  # noqa: E402

TREE = {
    "meson.build": "subdir('drivers')\nall_fake_dep = declare_dependency(dependencies: fake_driver_dep)\n",
    "drivers/meson.build": "fake_driver_dep = declare_dependency()\n",
    "drivers/blk/fake/fake_block_device.hpp": "#pragma once\n",
    "cuda/fake_context.hpp": "#pragma once\n",
    "cuda/meson.build": "fake_cuda_built = false\n",
    "daemon/fake_service.hpp": "#pragma once\n",
    "tools/io/fake_job.hpp": "#pragma once\n",
    "lib/beta/include/cxlpool/beta/public.hpp": "#pragma once\n",
    "lib/beta/src/beta_private.hpp": "#pragma once\n",
    "lib/beta/meson.build": (
        "beta_sources = files('src/beta.cpp')\n"
        "beta_private_inc = include_directories('src')\n"
        "beta_inc = include_directories('include')\n"),
    "lib/alpha/src/local.hpp": "#pragma once\n",
    "lib/alpha/src/deep/alpha.cpp": (
        '#include "../local.hpp"\n'              # 1 own module
        '#include "local.hpp"\n'                 # 2 own module, from a folder above
        '#include "cxlpool/beta/public.hpp"\n'   # 3 another module's public header
        "#include <vector>\n"                    # 4
        '#include "fake_block_device.hpp"\n'     # 5 driver
        "#include <liburing.h>\n"                # 6 vendor
        '#include "cuda_runtime_api.h"\n'        # 7 vendor
        '#include "fake_context.hpp"\n'          # 8 cuda/
        '#include "fake_service.hpp"\n'          # 9 daemon/
        '#include "io/fake_job.hpp"\n'           # 10 tools/
        '#include "beta_private.hpp"\n'          # 11 beta's src/
        '#include "cxlpool/hal/driver/gpu.hpp"\n'  # 12 driver SDK
        "#include <rte_ethdev.h>\n"              # 13 vendor
    ),
    "lib/alpha/meson.build": (
        "# '../beta/src/beta.cpp' in a comment is fine\n"   # 1
        "alpha_sources = files('src/deep/alpha.cpp', '../beta/src/beta.cpp')\n"  # 2
        "alpha_lib = static_library('alpha', alpha_sources, beta_sources,\n"     # 3
        "  include_directories: [beta_inc, beta_private_inc],\n"                 # 4
        "  dependencies: [fake_driver_dep, all_fake_dep])\n"                      # 5
        "x = fs.read(meson.project_source_root() / 'cuda' / 'meson.build')\n"    # 6
        "if fake_cuda_built\n"                                                    # 7
        "endif\n"),
    "lib/hal/include/cxlpool/hal/driver/gpu.hpp": "#pragma once\n",
    "lib/hal/include/cxlpool/hal/registry.hpp": '#pragma once\n#include "cxlpool/hal/driver/gpu.hpp"\n',
    "lib/hal/src/registry.cpp": '#include "cxlpool/hal/driver/gpu.hpp"\n',
    "lib/client/meson.build": "client_deps = [fake_driver_dep, all_fake_dep]\n",
}

EXPECTED = {
    ("lib/alpha/src/deep/alpha.cpp", 5, "lib-includes-driver"),
    ("lib/alpha/src/deep/alpha.cpp", 6, "lib-includes-vendor"),
    ("lib/alpha/src/deep/alpha.cpp", 7, "lib-includes-vendor"),
    ("lib/alpha/src/deep/alpha.cpp", 8, "lib-includes-driver"),
    ("lib/alpha/src/deep/alpha.cpp", 9, "lib-includes-program"),
    ("lib/alpha/src/deep/alpha.cpp", 10, "lib-includes-program"),
    ("lib/alpha/src/deep/alpha.cpp", 11, "lib-includes-private"),
    ("lib/alpha/src/deep/alpha.cpp", 12, "driver-sdk"),
    ("lib/alpha/src/deep/alpha.cpp", 13, "lib-includes-vendor"),
    ("lib/hal/include/cxlpool/hal/registry.hpp", 2, "driver-sdk"),
    ("lib/alpha/meson.build", 2, "meson-outside-module"),
    ("lib/alpha/meson.build", 3, "meson-foreign-sources"),
    ("lib/alpha/meson.build", 4, "meson-foreign-sources"),
    ("lib/alpha/meson.build", 5, "meson-picks-driver"),
    ("lib/alpha/meson.build", 6, "meson-outside-module"),
    ("lib/alpha/meson.build", 7, "meson-picks-driver"),
}


class LayeringCheck(unittest.TestCase):
    def test_reports_every_violation_at_its_line_and_nothing_else(self):
        with tempfile.TemporaryDirectory() as root:
            for rel, text in TREE.items():
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            _, violations = check_layering.check(root)
            got = {(v.path, v.line, v.rule) for v in violations}
            # Line 5 names two driver variables: one report each.
            self.assertEqual(got, EXPECTED, "\n".join(str(v) for v in violations))
            self.assertEqual(check_layering.main(["check_layering.py", root]), 1)

    def test_a_clean_tree_passes(self):
        with tempfile.TemporaryDirectory() as root:
            for rel in ("lib/alpha/src/alpha.cpp", "lib/alpha/src/alpha.hpp"):
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write('#include "alpha.hpp"\n#include <vector>\n')
            _, violations = check_layering.check(root)
            self.assertEqual(violations, [])


if __name__ == "__main__":
    unittest.main()
