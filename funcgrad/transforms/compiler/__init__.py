"""The compile pipeline: the passes over a traced ``Program`` (``passes``), its lowering
to one Python function of kernel calls (``lower``), the two run in order
(``pipeline``), backward plans (``plans``), the call-like primitive that runs a compiled
program (``call``) and ``fg.compile`` itself (``jit``)."""
