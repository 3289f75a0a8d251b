"""The orders of marking a harvester keeps for its re-scorings (frontier/redis/members.py)."""

from combine_scrapy.frontier.redis.connection import queue_member, queued_seq, queued_url
from combine_scrapy.frontier.redis.members import QueueSeqs


def test_a_mark_numbers_its_new_urls_from_its_first_order_and_skips_the_unnumbered():
    seqs = QueueSeqs()
    seqs.marked([("http://a/1", 0), ("http://a/2", 1), ("http://b/1", 2)], 40, [1])
    assert (seqs.get("http://a/1"), seqs.get("http://a/2"), seqs.get("http://b/1")) == (40, None, 42)
    seqs.learned([("http://a/2", 7), ("http://a/1", -1)])   # read from records: one known, one no longer marked
    assert (seqs.get("http://a/1"), seqs.get("http://a/2")) == (None, 7)
    seqs.forget("http://b/1")
    assert len(seqs) == 1


def test_the_oldest_quarter_is_forgotten_past_the_bound():
    seqs = QueueSeqs(capacity=8)
    seqs.marked([(f"http://a/{n}", n) for n in range(9)], 0, [])
    assert len(seqs) == 6 and seqs.get("http://a/0") is None and seqs.get("http://a/8") == 8


def test_a_member_is_read_back_as_its_order_of_marking_and_url():
    for seq in (0, 9, 16, 255, 2**40 + 3):
        member = queue_member(seq, ":/page").encode()
        assert queued_seq(member) == seq and queued_url("a.test", member) == "http://a.test/page"
