"""One simulated cell with the policy's counters: python simstats.py TOPIC SEEDSET CAP"""
import sys
import tempfile
from collections import Counter
from pathlib import Path

import combine_scrapy.policy as policy_module
from bench.focusreal import simulate as sim


class Stats(Counter):
    def inc_value(self, key, count=1): self[key] += count
    def max_value(self, key, value): self[key] = max(self.get(key, value), value)
    def set_value(self, key, value): self[key] = value

STATS = Stats()
original = policy_module.CrawlPolicy.__init__
def patched(self, *a, **k):
    k["stats"] = STATS
    original(self, *a, **k)
sim.CrawlPolicy.__init__ = patched
topic_key, seed_set, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
web, topic = sim.DocWeb(), sim.topic_named(topic_key)
with tempfile.TemporaryDirectory() as d:
    jobs = sim.topic_jobs([topic], Path(d) / "jobs")
    s = sim.Simulation(web, jobs, sim.Pages(web, jobs), sim.PageJudge(web, jobs))
    crawl = s.crawl(topic, seed_set, cap, Path(d) / "data")
    print("records", sim.summary(crawl, cap)["records_per_500"])
for k in ("frontier/marked", "frontier/marks_left_out", "frontier/raised", "links/model/rescored"):
    print(k, STATS[k], round(STATS[k] / cap, 1), "a page")
