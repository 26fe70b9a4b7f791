"""StringConcat, RegexFullMatch, StringNormalizer, StringSplit -> relay's
strings.* ops (dialects/relay/ops/strings.py).  A model holding string
tensors runs in the relay interpreter (the build says so)."""

from __future__ import annotations

from ..registry import converter


@converter("StringConcat", 20)
def string_concat(cx, node):
    return cx.op("strings.concat", node.input(0), node.input(1))


@converter("RegexFullMatch", 20)
def regex_full_match(cx, node):
    pattern = node.attr("pattern")
    if pattern is None:
        raise cx.error("needs the 'pattern' attribute")
    # ONNX names RE2's syntax; Python's re reads RE2's common subset alike
    return cx.op("strings.regex_full_match", node.input(0), pattern=pattern)


@converter("StringNormalizer", 10)
def string_normalizer(cx, node):
    locale = node.attr("locale")
    if locale not in (None, "", "en_US", "en_US.UTF-8", "C"):
        raise cx.unsupported(f"locale '{locale}' (case changes follow Python's Unicode rules)")
    return cx.op("strings.normalize", node.input(0),
                 case_change_action=node.attr("case_change_action", "NONE"),
                 is_case_sensitive=bool(node.attr("is_case_sensitive", 0)),
                 stopwords=tuple(node.attr("stopwords") or ()))


@converter("StringSplit", 20)
def string_split(cx, node):
    delim = node.attr("delimiter")
    maxsplit = node.attr("maxsplit")
    out = cx.op("strings.split", node.input(0), delimiter=delim or None, maxsplit=maxsplit)
    return [cx.get_item(out, 0), cx.get_item(out, 1)]
