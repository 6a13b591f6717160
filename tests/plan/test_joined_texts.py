"""``JoinedTexts``: strings held a batch to a string read back as the list they were."""

from __future__ import annotations

import pytest

from farm.plan.joined_texts import JoinedTexts


def test_strings_appended_in_batches_read_back_as_the_list_they_were() -> None:
    batches = [["a", "", "bc"], [], ["ünï côdé", "1 60.0 C 7"], ["z" * 300]]
    texts, plain = JoinedTexts(), []
    for batch in batches:
        texts.extend(batch)
        plain += batch
    assert len(texts) == len(plain) == 6
    assert list(texts) == plain and texts == plain and texts == JoinedTexts(plain)
    assert [texts[i] for i in range(-6, 6)] == plain + plain
    assert texts[1:5] == plain[1:5] and texts[::-2] == plain[::-2] and texts[4:2] == []
    assert texts != plain[:-1] and texts != [*plain[:-1], "y"] and texts != "abc"
    with pytest.raises(IndexError):
        texts[6]
    with pytest.raises(IndexError):
        texts[-7]
