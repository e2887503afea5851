"""The semantic layer of ``fx``: the typed values and the rules that turn Python operations on them into IR.

User code never imports this package; ``flydsl.expr`` (``fx``) and its submodules are the surface. The
modules form a one-way stack (each imports only the ones above it in this list, plus ``flydsl.ir``,
``flydsl.dialects``, ``flydsl.layout`` and ``flydsl.utils``)::

    context     the TraceContext of the trace in progress (per thread): target, fast-math scopes,
                known block size, shared-memory usage, the IR builder state, the jit's kernels
    errors      RuntimeValueError and the "what to write instead" messages
    fold        compile-time evaluation of an op through its OpDef's scalar hook / evaluate
    fastmath    fast-math flags and their precedence
    shape       nested logical shapes of Vectors
    casts       the cast plan of ``.to()`` (which arith ops convert S to D), rounding modes
    operators   which arith op a Python operator becomes for a type; its fold; operator mixin methods
    numeric     Numeric and the scalar types; their operators (a mixin), promotion lattice, conversions
    vector      Vector and its operators (a mixin), lane-wise select/reduce, Vector[dtype, shape] aliases
    pointer     Pointer: element offsets, loads, stores
    inttuple    IntTuple/StaticInt and the leaf protocol of layouts holding run-time integers
    iterators   where a tensor's elements live (memory, buffer, registers, coordinates)

No module here reads another's state at import time or installs anything into another: operators are
methods of the classes (``ScalarOperators``, ``VectorOperators``). Where a lower module must act on a value
of a higher one (a scalar ``select`` between two Vectors), it calls a method of that value's class.
"""
