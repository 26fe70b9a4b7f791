"""A measurement worker: ``python -m tvmd.autotvm.worker``, started by
measure.Worker, serving build and run calls on its stdin and stdout."""

import sys

from .measure import serve

if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
