"""The LALR(1) driver: tokens -> AST, over the parse table Lark builds.

Lark analyses grammar/nx.lark and gives us its LALR(1) table; this module
runs that table with a loop of its own. Lark's general driver spends most of
its time on things this language does not need (interactive parsing, tree
shaping wrappers, per-token exception set-up); the loop below does one dict
lookup per action and calls the AST builder (nxc/syntax/parse.py) directly. It is
what lets the front end reach its throughput target (docs/performance.md).

Tree shaping follows Lark's own rules, so the grammar reads as Lark grammar:
  - a rule or EBNF helper whose name starts with `_` is inlined into its
    parent (its children are spliced in);
  - a `?rule` with a single child and no alias is replaced by that child;
  - every other rule calls its builder with its children (`Tables` asks
    nxc/syntax/parse.py for one builder per rule, named by the rule's alias or name).
"""
from __future__ import annotations

from typing import Callable, Iterable


class UnexpectedToken(Exception):
    """No action for `token` in the current state; `expected` are terminal names."""

    def __init__(self, token, expected: set[str]):
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.expected = expected


# What a reduction does with its children (see the module docstring).
_BUILD, _INLINE, _UNIT = 0, 1, 2


def table_from_lark(lark, start: str) -> dict:
    """Lark's LALR(1) table for `start` as plain data (picklable, cacheable).

    `actions[state][terminal]` is a new state (>= 0, shift) or `~rule_index`
    (< 0, reduce). `gotos[state][nonterminal]` is the state after a reduce.
    Each rule is (size, origin, alias or None, passes a single child
    through (a `?rule`), inline flags, symbol names).
    """
    table = lark.parser.parser.parser.parse_table
    n_states = max(table.states) + 1
    actions: list[dict[str, int]] = [{} for _ in range(n_states)]
    gotos: list[dict[str, int]] = [{} for _ in range(n_states)]
    reductions: dict = {}           # Lark rule -> index, in first-seen order
    for state, row in table.states.items():
        for symbol, (action, arg) in row.items():
            symbol = str(symbol)        # Lark's names are Token objects: slow dict keys
            if action.name == "Shift":
                target = actions if symbol.isupper() else gotos     # "$END".isupper() too
                target[state][symbol] = arg
            else:
                actions[state][symbol] = ~reductions.setdefault(arg, len(reductions))
    singles = _single_child_inlined(reductions)
    rules: list[tuple] = []
    for rule in reductions:
        origin = str(rule.origin.name)
        inline = tuple(not s.is_term and s.name.startswith("_") and s.name not in singles
                       for s in rule.expansion)
        alias = None if rule.alias is None else str(rule.alias)
        rules.append((len(inline), origin, alias, bool(rule.options.expand1) or origin in singles, inline,
                      tuple(str(s.name) for s in rule.expansion)))
    return {"start": table.start_states[start], "end": table.end_states[start],
            "actions": actions, "gotos": gotos, "rules": rules}


def _single_child_inlined(rules) -> set[str]:
    """Inlined rules that always stand for exactly one child (`_stmt: let_stmt | ...`).

    Splicing their one-element list into the parent is the same as using the
    child itself, so they are treated like `?rule`s: a unit reduction, the
    value passed through unchanged (fewer lists, fewer steps).
    """
    by_origin: dict[str, list] = {}
    for rule in rules:
        by_origin.setdefault(str(rule.origin.name), []).append(rule)
    singles: set[str] = set()
    changed = True
    while changed:
        changed = False
        for origin, alternatives in by_origin.items():
            if origin in singles or not origin.startswith("_"):
                continue
            if all(len(r.expansion) == 1 and (r.expansion[0].is_term or not r.expansion[0].name.startswith("_")
                                              or r.expansion[0].name in singles) for r in alternatives):
                singles.add(origin)
                changed = True
    return singles


class Tables:
    """A table (see `table_from_lark`) joined to the AST builders.

    `make_builder(name, symbols, inline)` returns the function that turns one
    rule's children into its value; `name` is the rule's alias or name,
    `symbols` its right-hand side and `inline` None when no child is
    spliced in (every child then sits where its symbol is).
    """

    def __init__(self, table: dict, make_builder: Callable):
        self.start_state, self.end_state = table["start"], table["end"]
        self.actions, self.gotos = table["actions"], table["gotos"]
        self.rules = [_reduction(rule, make_builder) for rule in table["rules"]]

        # (state below, top state, lookahead) -> top state after every unit
        # reduction that applies; filled while parsing (see `parse`).
        self.unit_chains: dict[tuple[int, int, str], int] = {}

    def expected(self, state: int) -> set[str]:
        return set(self.actions[state])

    def follow_units(self, below: int, top: int, lookahead: str) -> int:
        while True:
            act = self.actions[top].get(lookahead)
            if act is None or act >= 0:
                return top
            size, origin, what, _, _ = self.rules[~act]
            if what != _UNIT:
                return top
            top = self.gotos[below][origin]


def _reduction(rule: tuple, make_builder) -> tuple:
    """(size, origin, kind, splicer or None, builder) for one rule."""
    size, origin, alias, expand1, inline, symbols = rule
    plain = alias is None
    # A `?rule` over one non-inlined symbol always has exactly one child:
    # its value passes through unchanged, only the state moves.
    single = size == 1 and not inline[0]
    if expand1 and plain and single:
        kind, builder = _UNIT, None
    elif origin.startswith("_"):
        kind, builder = _INLINE, None
    else:
        kind = _BUILD
        builder = make_builder(alias or origin, symbols, inline if any(inline) else None)
        if expand1 and plain:
            builder = _expand_single(builder)
    return size, origin, kind, _splicer(inline) if any(inline) else None, builder


def _expand_single(builder):
    def build(children):
        return children[0] if len(children) == 1 else builder(children)
    return build


def parse(tokens: Iterable, tables: Tables):
    """Run the table over `tokens`, which must end with a `$END` token."""
    actions, gotos, rules = tables.actions, tables.gotos, tables.rules
    unit_chains = tables.unit_chains
    end_state = tables.end_state
    states = [tables.start_state]
    values: list = []
    push_state, push_value = states.append, values.append
    # One loop, everything inlined: this is the hottest code of the front end.
    for token in tokens:
        kind = token.type
        while True:
            top = states[-1]
            act = actions[top].get(kind)
            if act is None:
                if kind == "$END" and top == end_state:
                    return values[-1]
                raise UnexpectedToken(token, tables.expected(top))
            if act >= 0:
                push_state(act)
                push_value(token)
                break
            size, origin, what, splice, builder = rules[~act]
            if what == _UNIT:
                # Unit reductions (`?expr: binary_chain` ...) pop one state
                # and push one, so the state below stays put: the whole chain
                # depends only on (below, top, lookahead) and is looked up.
                key = (states[-2], top, kind)
                new_top = unit_chains.get(key)
                if new_top is None:
                    new_top = unit_chains[key] = tables.follow_units(states[-2], top, kind)
                states[-1] = new_top
                continue
            if size == 1 and splice is None:
                # (the commonest shape: replace the top in place)
                values[-1] = [values[-1]] if what == _INLINE else builder([values[-1]])
                states[-1] = gotos[states[-2]][origin]
                continue
            if size:
                children = values[-size:]
                del values[-size:]
                del states[-size:]
                if splice is not None:
                    children = splice(children)
            else:
                children = []
            push_value(children if what == _INLINE else builder(children))
            push_state(gotos[states[-1]][origin])
    raise ValueError("token stream did not end with $END")


def _splicer(inline: tuple[bool, ...]):
    """children -> children with the inlined ones' lists spliced in."""
    # A left-recursive helper (`__x: __x item`) hands its own list back as
    # the first child: extend it in place, or long lists would cost O(n^2).
    if inline[0] and not any(inline[1:]):
        def splice_first(children: list) -> list:      # the common shape
            out = children[0]
            out += children[1:]
            return out
        return splice_first

    def splice(children: list) -> list:
        out = children[0] if inline[0] else [children[0]]
        for child, flat in zip(children[1:], inline[1:]):
            if flat:
                out.extend(child)
            else:
                out.append(child)
        return out
    return splice
