# SPDX-License-Identifier: GPL-3.0-or-later
"""What a reference check does when it cannot run (torch or numpy missing).

Outside CI it exits 77, which ctest reports as skipped. Under CI=true it fails (exit 1): a CI
machine without python3-torch would otherwise pass without checking most families' numbers.
"""
import os
import sys


def cannot_run(reason):
    if os.environ.get("CI") == "true":
        print(f"FAIL: this reference check cannot run under CI=true: {reason} "
              "(install python3-torch and python3-numpy: scripts/install-deps.sh)")
        sys.exit(1)
    print(f"SKIP: {reason} (apt-get install python3-torch python3-numpy)")
    sys.exit(77)
