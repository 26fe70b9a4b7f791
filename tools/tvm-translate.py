#!/usr/bin/env python3
"""tvm-translate: tir to LLVM IR, assembly, objects or CUDA C (a thin script over tvmd.tools.translate_main)."""
import sys

from tvmd.tools.translate_main import main

sys.exit(main())
