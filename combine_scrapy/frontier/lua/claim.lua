-- ARGV: url, host, now, lease end, held lease end ('' for none). 1 when leased, else 0.

return lease(ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]) and 1 or 0
