#!/usr/bin/env python3
"""tvm-opt: run passes over IR text (a thin script over tvmd.tools.opt_main)."""
import sys

from tvmd.tools.opt_main import main

sys.exit(main())
