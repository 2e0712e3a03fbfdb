"""Automatic differentiation: the JVP and VJP recorders and the one graph they build
(``interpreters``, ``graph``), the tape behind ``backward()`` (``tape``), ``fg.grad`` and
its relatives (``api``), and the call-like primitives whose rules are user code
(``custom``, ``function``, ``checkpoint``), with ``inference_mode``. Nothing here imports
the compiler: backward plans plug in from above (``graph.use_backward_plans``)."""
