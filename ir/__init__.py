"""The IR core: operations, values, blocks, regions, types, attributes.

Kept import-light: `tvmd.ir` itself imports nothing, so tools can start fast.
Import the submodules you need (`tvmd.ir.core`, `tvmd.ir.types`, ...).
"""
