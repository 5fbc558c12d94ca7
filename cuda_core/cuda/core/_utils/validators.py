"""Checks of string-enum arguments whose messages name every accepted value
(the enum is the one list of them), as upstream's ``cuda.core._utils.validators``."""


def format_or_list(values):
    """The values' reprs as ``A``, ``A or B`` or ``A, B or C`` ("" for none)."""
    reprs = [repr(v) for v in values]
    if len(reprs) < 2:
        return "".join(reprs)
    return ", ".join(reprs[:-1]) + " or " + reprs[-1]


def check_str_enum(value, enum_class, *, allow_none=False):
    """Raises ValueError naming the accepted values unless `value` is the value
    of a member of `enum_class` (or None, with `allow_none`)."""
    if allow_none and value is None:
        return
    accepted = sorted(member.value for member in enum_class)
    if value not in accepted:
        shown = [None, *accepted] if allow_none else accepted
        raise ValueError(f"{value!r} is not a valid {enum_class.__name__}. Must be {format_or_list(shown)}")
