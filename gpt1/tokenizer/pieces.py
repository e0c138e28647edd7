"""Clean text cut at the spaces spaCy's word splitting never reaches across, so that each distinct piece is split once.

spaCy's tokenizer cuts a text at whitespace into spans and splits each span alone (prefixes, suffixes, infixes and the
special cases keyed by the whole span), then matches its special cases (emoticons, abbreviations) once more over the
whole token stream, blind to spaces (`Tokenizer._apply_special_cases`). A match across a space changes nothing by
itself, but it can block a match it overlaps: in "( :1" the tokens "(" and ":" spell the special case "(:", which
keeps ":" and "1" from being joined into ":1" as they are in ":1" alone. Such a match needs a space between two
tokens that some special case holds side by side: the character before the space ends one of them and the character
after it starts the next, "(" and ":" for "(:", "." and "D" for "Ph.D.". A piece therefore ends at every space but
those between such a pair, and the words of a text are the words of its pieces, in order. Texts are prepare's (after
GPT-1's clean-up), where words are separated by single spaces and a line break stands alone between two.
"""

from __future__ import annotations

import re
from collections import defaultdict


def special_case_pairs(tokenizer) -> dict[str, set[str]]:
    """For each character that ends a token of one of `tokenizer`'s special cases, the characters that start the token
    after it in that special case, with the special cases split by the same rules less the special cases (as spaCy
    splits them to match them)."""
    from spacy.tokenizer import Tokenizer

    bare = Tokenizer(tokenizer.vocab, rules={}, prefix_search=tokenizer.prefix_search,
                     suffix_search=tokenizer.suffix_search, infix_finditer=tokenizer.infix_finditer,
                     token_match=tokenizer.token_match, url_match=tokenizer.url_match)
    pairs: dict[str, set[str]] = defaultdict(set)
    for special in tokenizer.rules:
        tokens = [token.text for token in bare(special)]
        for before, after in zip(tokens, tokens[1:]):
            pairs[before[-1]].add(after[0])
    return dict(pairs)


def _character_class(characters) -> str:
    return "[" + "".join(re.escape(character) for character in sorted(characters)) + "]"


class PieceCutter:
    """`pieces(text)`: the text cut at every space but those between a pair of `special_case_pairs`."""

    def __init__(self, tokenizer) -> None:
        self.pairs = special_case_pairs(tokenizer)
        # No pair joins two letters or digits, so a space next to neither symbol of a pair is passed over at C speed;
        # the few spaces the pattern finds are checked pair by pair.
        symbols_before = {c for c in self.pairs if not c.isalnum()}
        after = {c for followers in self.pairs.values() for c in followers}
        symbols_after = {c for c in after if not c.isalnum()}
        assert all(not (a.isalnum() and b.isalnum()) for a, bs in self.pairs.items() for b in bs), self.pairs
        self._candidates = re.compile(f" (?:(?<={_character_class(symbols_before)} )(?={_character_class(after)})"
                                      f"|(?<={_character_class(self.pairs)} )(?={_character_class(symbols_after)}))")

    def pieces(self, text: str) -> list[str]:
        parts = text.split(" ")
        kept = [m.start() for m in self._candidates.finditer(text) if text[m.start() + 1] in self.pairs[text[m.start() - 1]]]
        if not kept:
            return parts
        # The k-th space of the text lies between parts k and k+1: join each run of kept spaces' parts.
        joined, index, position = [], 0, 0
        for space in kept:
            index += text.count(" ", position, space)
            joined.append(index)
            position = space
        pieces, taken, run = [], 0, 0
        while run < len(joined):
            first = last = joined[run]
            while run + 1 < len(joined) and joined[run + 1] == last + 1:
                run += 1
                last += 1
            pieces.extend(parts[taken:first])
            pieces.append(" ".join(parts[first:last + 2]))
            taken = last + 2
            run += 1
        pieces.extend(parts[taken:])
        return pieces
