"""A contextual lexer for Lark's LALR parser, one regex match per token.

Lark's own contextual lexer matches whitespace and each token separately and
keeps a line counter updated character class by character class; on IR text
that is half the parse time.  This lexer keeps Lark's rules and replaces the
mechanics:

* Per parser state (the set of terminals it accepts), one compiled regex:
  ``(?:whitespace|comment)*`` followed by one named group per terminal,
  ordered as Lark orders them (priority, then longest possible match, then
  longest literal, then name).  ``m.lastgroup`` names the token.
* Lark's keyword rule: a string terminal that a regex terminal of the same
  priority also matches (``return`` and the op-name regex) is not tried on
  its own; a regex match equal to the keyword becomes the keyword.
* Lines are counted only between tokens, with ``str.count``.
* Errors are Lark's: UnexpectedToken when the text is a token that this
  state does not accept, UnexpectedCharacters otherwise.

It is installed with ``Lark(..., _plugins={"ContextualLexer": FastContextualLexer})``.
"""

from __future__ import annotations

import re

from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.lexer import Lexer, PatternStr, Token


class _StateLexer:
    __slots__ = ("regex", "keywords", "names", "callbacks")

    def __init__(self, terminals, ignore_re, callbacks):
        regex_terms = [t for t in terminals if not isinstance(t.pattern, PatternStr)]
        str_terms = [t for t in terminals if isinstance(t.pattern, PatternStr)]
        embedded = set()
        self.keywords = {}   # regex terminal name -> {text: keyword terminal name}
        for rt in regex_terms:
            rx = re.compile(rt.pattern.to_regexp())
            for st in str_terms:
                if st.priority != rt.priority:
                    continue
                s = st.pattern.value
                m = rx.match(s)
                if m and m.group(0) == s:
                    self.keywords.setdefault(rt.name, {})[s] = st.name
                    if st.pattern.flags <= rt.pattern.flags:
                        embedded.add(st.name)
        terms = [t for t in terminals if t.name not in embedded]
        terms.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        alts = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terms)
        self.regex = re.compile(f"{ignore_re}(?:{alts})" if alts else ignore_re + r"(?!)")
        self.names = frozenset(t.name for t in terminals)
        self.callbacks = callbacks


class FastContextualLexer(Lexer):
    __future_interface__ = 2

    def __init__(self, conf, states, always_accept=()):
        self.terminals = list(conf.terminals)
        self.by_name = {t.name: t for t in self.terminals}
        ignore = [self.by_name[n].pattern.to_regexp() for n in conf.ignore]
        # Atomic and possessive: the regex must never backtrack into the
        # middle of a comment or a run of blanks and read a token there.
        self.ignore_re = "(?:" + "|".join(f"(?>{p})" for p in ignore) + ")*+" if ignore else ""
        self.ignore_only = re.compile(self.ignore_re + r"\Z") if ignore else re.compile(r"\Z")
        self.callbacks = dict(conf.callbacks or {})
        self.states = {s: frozenset(a) | frozenset(always_accept) for s, a in states.items()}
        self._by_accepts: dict = {}
        self._by_state: dict = {}
        self._root = None

    def _lexer_for(self, state):
        sl = self._by_state.get(state)
        if sl is None:
            accepts = self.states[state]
            sl = self._by_accepts.get(accepts)
            if sl is None:
                terms = [self.by_name[n] for n in accepts if n in self.by_name]
                sl = _StateLexer(terms, self.ignore_re, self.callbacks)
                self._by_accepts[accepts] = sl
            self._by_state[state] = sl
        return sl

    def _root_lexer(self):
        if self._root is None:
            self._root = _StateLexer(self.terminals, self.ignore_re, self.callbacks)
        return self._root

    def lex(self, lexer_state, parser_state):
        src = lexer_state.text
        text = getattr(src, "text", src)
        pos = getattr(src, "start", 0)
        end = getattr(src, "end", len(text))
        if end is None or end < 0:
            end = len(text)
        line = text.count("\n", 0, pos) + 1
        line_start = text.rfind("\n", 0, pos) + 1
        callbacks = self.callbacks
        last = None
        lexer_for = self._lexer_for
        while pos < end:
            sl = lexer_for(parser_state.position)
            m = sl.regex.match(text, pos, end)
            if m is None:
                if self.ignore_only.match(text[pos:end]):
                    return
                self._fail(text, pos, end, line, line_start, sl, parser_state, last)
            kind = m.lastgroup
            start = m.start(kind)
            value = m.group(kind)
            kw = sl.keywords.get(kind)
            if kw is not None:
                kind = kw.get(value, kind)
            nl = text.count("\n", pos, start)
            if nl:
                line += nl
                line_start = text.rfind("\n", pos, start) + 1
            tok = Token(kind, value, start, line, start - line_start + 1)
            pos = m.end()
            nl = value.count("\n")
            if nl:
                line += nl
                line_start = text.rfind("\n", start, pos) + 1
            cb = callbacks.get(kind)
            if cb is not None:
                tok = cb(tok)
            last = tok
            lexer_state.last_token = tok
            yield tok

    def _fail(self, text, pos, end, line, line_start, sl, parser_state, last):
        ws = re.compile(self.ignore_re).match(text, pos, end)
        p = ws.end() if ws else pos
        nl = text.count("\n", pos, p)
        if nl:
            line += nl
            line_start = text.rfind("\n", pos, p) + 1
        col = p - line_start + 1
        # a token this state does not accept reads better than "unexpected character"
        m = self._root_lexer().regex.match(text, p, end)
        if m is not None and m.end() > p:
            kind = m.lastgroup
            value = m.group(kind)
            kind = self._root.keywords.get(kind, {}).get(value, kind)
            tok = Token(kind, value, p, line, col)
            raise UnexpectedToken(tok, set(sl.names), state=parser_state, token_history=[last] if last else None,
                                  terminals_by_name=self.by_name)
        raise UnexpectedCharacters(text, p, line, col, allowed=set(sl.names), state=parser_state,
                                   token_history=[last] if last else None, terminals_by_name=self.by_name)
