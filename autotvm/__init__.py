"""AutoTVM: templates with knobs, their config space, and (to come) tasks,
tuners, the XGBoost cost model, measurement and tuning logs.

``space`` holds the knob syntax (``#tune.knob<"NAME", [C...], D>``) and the
config space of a te template; ``tvm-tune --space template.te`` prints it.
"""
