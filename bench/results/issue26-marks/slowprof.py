"""Per-script Redis time from SLOWLOG (threshold 0) after a crawl: python slowprof.py PORT PAGES"""
import collections
import hashlib
import sys

import redis

from combine_scrapy.frontier.redis import connection as c

r = redis.Redis(port=int(sys.argv[1]))
pages = float(sys.argv[2])
names = {}
for single in (True, False):
    for name, code in c._scripts(single).items():
        names[hashlib.sha1(code.encode()).hexdigest()] = name
log = r.slowlog_get(1_000_000)
tot: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()
for e in log:
    cmd = e["command"].split(b" ") if isinstance(e["command"], bytes) else e["command"]
    first = cmd[0].decode().lower() if isinstance(cmd[0], bytes) else str(cmd[0]).lower()
    key = first
    if first == "evalsha":
        key = names.get(cmd[1].decode(), cmd[1].decode()[:8])
    tot[key] += e["duration"]
    calls[key] += 1
s = sum(tot.values())
print(f"entries {len(log)} total {s} us, {s/pages:.0f} us/page")
for k, v in tot.most_common(20):
    print(f"{k:20s} {v/pages:8.1f} us/page  {calls[k]/pages:6.2f} calls/page  {v/calls[k]:8.1f} us/call")
