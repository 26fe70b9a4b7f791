"""Mutations of IR text, at the level of its tokens.

A mutant is a seed with 1 to 3 of these applied, each chosen at random:

    number      a number becomes an interesting one (0, -1, 2^31, 2^63, 2^64,
                1e308, nan, a 5000-digit literal, ...)
    value       an SSA name becomes another of the same text (use before
                definition, wrong types, self-reference)
    word        an identifier (op name, type, keyword, attribute name)
                becomes another from the whole corpus's vocabulary
    type        an element type becomes another (i1, i128, index, bf16, none...)
    delete      a token, or a line, disappears
    duplicate   a line is repeated
    swap        two lines change places
    splice      a line from another seed is inserted
    punct       a bracket, brace, comma, colon or quote is inserted or removed
    truncate    the text ends early
    bytes       a raw byte is inserted: NUL, CR, 0xff, a non-ASCII letter

Tokens are recognised by one regular expression; mutating at that level
keeps most mutants lexically valid, so they reach the parser's later rules,
the verifier and the passes instead of dying at the first character.
"""

from __future__ import annotations

import random
import re

TOKEN = re.compile(r"""
    (?P<value>%[\w.$-]+)
  | (?P<symbol>@[\w.$-]+)
  | (?P<number>-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<word>[A-Za-z_][\w.]*)
  | (?P<punct>[{}()\[\]<>,:=*?+\-/|^!#])
""", re.X)

INTERESTING_NUMBERS = [
    "0", "1", "-1", "2", "3", "7", "8", "16", "255", "256", "-128", "65535", "65536",
    "2147483647", "2147483648", "-2147483649", "4294967295", "4294967296",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "340282366920938463463374607431768211456",
    "0x7fffffff", "0xffffffffffffffff", "0x1" + "0" * 40,
    "0.5", "-0.0", "1e308", "-1e308", "1e-320", "3.5e38", "1e999", "nan", "inf", "-inf",
    "1" * 50, "9" * 5000, "1e400000",
]
TYPES = ["i1", "i8", "i16", "i32", "i64", "i128", "i0", "i3", "ui8", "si8", "index", "f16",
         "bf16", "f32", "f64", "none", "tensor<f32>", "tensor<?xf32>", "tensor<0xf32>",
         "memref<4xf32>", "vector<4xf32>", "vector<0xi1>", "!te.axis", "tuple<>"]
PUNCT = list("{}()[]<>,:=\"")
BYTES = ["\0", "\r", "\x7f", "\ufeff", "é", "\u202e", "\\", "\t", "\n\n", "//"]


def tokens(text):
    return [(m.lastgroup, m.start(), m.end()) for m in TOKEN.finditer(text)]


def vocabulary(texts):
    """Every word and symbol of the corpus: what a `word` mutation draws from."""
    words = set()
    for t in texts:
        for kind, a, b in tokens(t):
            if kind in ("word", "symbol", "string"):
                words.add(t[a:b])
    return sorted(words)


def _replace(text, a, b, new):
    return text[:a] + new + text[b:]


def _pick(rng, toks, kind):
    cand = [t for t in toks if t[0] == kind]
    return rng.choice(cand) if cand else None


def mutate_once(rng: random.Random, text: str, vocab, other_lines) -> tuple[str, str]:
    """One mutation: (new text, what was done)."""
    toks = tokens(text)
    lines = text.split("\n")
    op = rng.choice(["number", "number", "value", "value", "word", "word", "type", "delete",
                     "delete-line", "duplicate", "swap", "splice", "punct", "truncate", "bytes"])
    if op == "number" and (t := _pick(rng, toks, "number")):
        return _replace(text, t[1], t[2], rng.choice(INTERESTING_NUMBERS)), op
    if op == "value" and (t := _pick(rng, toks, "value")):
        names = sorted({text[a:b] for k, a, b in toks if k == "value"})
        return _replace(text, t[1], t[2], rng.choice(names)), op
    if op == "word" and (t := _pick(rng, toks, "word")) and vocab:
        return _replace(text, t[1], t[2], rng.choice(vocab)), op
    if op == "type":
        cand = [t for t in toks if t[0] == "word" and re.fullmatch(r"(u?i|si|f|bf)\d+|index", text[t[1]:t[2]])]
        if cand:
            t = rng.choice(cand)
            return _replace(text, t[1], t[2], rng.choice(TYPES)), op
    if op == "delete" and toks:
        t = rng.choice(toks)
        return _replace(text, t[1], t[2], ""), op
    if op == "delete-line" and len(lines) > 1:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1:]), op
    if op == "duplicate" and lines:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]), op
    if op == "swap" and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), op
    if op == "splice" and other_lines:
        i = rng.randrange(len(lines) + 1)
        return "\n".join(lines[:i] + [rng.choice(other_lines)] + lines[i:]), op
    if op == "punct":
        if toks and rng.random() < 0.5:
            t = _pick(rng, toks, "punct")
            if t:
                return _replace(text, t[1], t[2], ""), op
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(PUNCT) + text[i:], op
    if op == "truncate" and text:
        return text[:rng.randrange(len(text))], op
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice(BYTES) + text[i:], "bytes"


def mutate(rng: random.Random, text: str, vocab, other_lines) -> tuple[str, list]:
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        text, what = mutate_once(rng, text, vocab, other_lines)
        done.append(what)
    return text, done
