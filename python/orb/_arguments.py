"""Task arguments on the wire: one leading entry naming the keyword arguments (raw
bytes: the names joined by NUL, empty when there are none; a leading DYNAMIC byte asks
the worker for num_returns="dynamic"), then each value in order.
A top-level ObjectRef is passed by reference (the task gets its value, as in Ray);
anything else is serialized, and put into the object store first when large, so that
a big array crosses as a reference and is read in place."""
import inspect

from orb import _core
from orb._core import ObjectRef
from orb._serialization import INLINE_BYTES, Serialized, deserialize


# Header prefix: the call's generator returns one ref to all its items' refs (Ray's
# num_returns="dynamic"), a Python-only mode the core does not need to know of.
DYNAMIC = b"\x01"


def pack(args, kwargs, function_name, dynamic_returns=False):
    names = list(kwargs)
    header = b"\0".join(n.encode() for n in names)
    out = [DYNAMIC + header if dynamic_returns else header]
    for i, value in enumerate(list(args) + [kwargs[n] for n in names]):
        if isinstance(value, ObjectRef):
            out.append(value)
            continue
        what = ("argument %d" % i) if i < len(args) else ("argument %r" % names[i - len(args)])
        serialized = Serialized(value, what="%s of %s" % (what, function_name))
        out.append(_core.put(serialized) if serialized.size > INLINE_BYTES else serialized)
    return out


def unpack(values):
    """(args, kwargs) from the buffers a worker was given."""
    args, kwargs, _ = unpack_call(values)
    return args, kwargs


def unpack_call(values):
    """(args, kwargs, whether the call asks for dynamic returns)."""
    header = bytes(values[0])
    dynamic = header.startswith(DYNAMIC)
    if dynamic:
        header = header[len(DYNAMIC):]
    names = header.split(b"\0") if header else []
    decoded = [deserialize(v) for v in values[1:]]
    split = len(decoded) - len(names)
    return decoded[:split], {n.decode(): v for n, v in zip(names, decoded[split:])}, dynamic


def signature_of(function, bound=False):
    """The signature calls to `function` are checked against before they are sent (as
    Ray does); `bound`: a method, whose first parameter the actor fills. None when it
    has none to read (a builtin)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    if bound:
        parameters = list(signature.parameters.values())
        if not parameters or parameters[0].kind not in (parameters[0].POSITIONAL_ONLY,
                                                          parameters[0].POSITIONAL_OR_KEYWORD):
            return None
        signature = signature.replace(parameters=parameters[1:])
    return signature


def positional_bounds(signature):
    """(fewest, most) positional arguments a signature of plain parameters takes with no
    keywords; None when it has others (keyword-only, *args, **kwargs, positional-only)."""
    if signature is None:
        return None
    parameters = list(signature.parameters.values())
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in parameters):
        return None
    return sum(p.default is p.empty for p in parameters), len(parameters)


def check_call(signature, args, kwargs, name, bounds=None):
    """TypeError, at the caller, for arguments `name` cannot take. `bounds`, from
    positional_bounds: a call by position within them needs no binding."""
    if signature is None:
        return
    if bounds is not None and not kwargs and bounds[0] <= len(args) <= bounds[1]:
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError("%s%s: %s" % (name, signature, e)) from None
