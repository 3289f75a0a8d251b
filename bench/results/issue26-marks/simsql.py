"""One simulated cell: SQL statements the SQLite frontier ran and CPU time. python simsql.py TOPIC SEEDSET CAP"""
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.focusreal import simulate as sim

counts = Counter()
real_connect = sqlite3.connect
def connect(*a, **k):
    db = real_connect(*a, **k)
    db.set_trace_callback(lambda sql: counts.update([sql.split()[0].upper()]))
    return db
sqlite3.connect = connect
topic_key, seed_set, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
web, topic = sim.DocWeb(), sim.topic_named(topic_key)
with tempfile.TemporaryDirectory() as d:
    jobs = sim.topic_jobs([topic], Path(d) / "jobs")
    s = sim.Simulation(web, jobs, sim.Pages(web, jobs), sim.PageJudge(web, jobs))
    cpu = time.process_time()
    crawl = s.crawl(topic, seed_set, cap, Path(d) / "data")
    cpu = time.process_time() - cpu
    print("records", sim.summary(crawl, cap)["records_per_500"], "cpu s", round(cpu, 1))
print({k: v for k, v in counts.most_common(8)}, "total", sum(counts.values()), "per fetch", round(sum(counts.values()) / cap, 1))
