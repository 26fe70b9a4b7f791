#!/usr/bin/env python3
"""tvm-run: compile and run a lowered module's @main (a thin script over tvmd.tools.run_main)."""
import sys

from tvmd.tools.run_main import main

sys.exit(main())
