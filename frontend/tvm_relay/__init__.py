"""Classic TVM's Relay text format, both ways (``tvm-translate
--import-tvm-relay`` / ``--export-tvm-relay``).

    from tvmd.frontend.tvm_relay import import_tvm_relay, export_tvm_relay
    module = import_tvm_relay(open("model.txt").read(), "model.txt", params=load_param_dict(blob))
    text = export_tvm_relay(module)          # '#[version = "0.0.5"]' ... '#[metadata]'

reader.py reads TVM's text (grammar: tvm_relay.lark), writer.py writes it,
params.py reads and writes TVM's binary arrays and ``save_param_dict`` files.
"""

from .params import load_param_dict, save_param_dict
from .reader import TvmRelayError, import_tvm_relay, to_dialect_text

__all__ = ["import_tvm_relay", "to_dialect_text", "load_param_dict", "save_param_dict", "TvmRelayError"]
