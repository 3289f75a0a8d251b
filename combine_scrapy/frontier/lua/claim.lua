-- ARGV: url, host, now, lease end, held lease end ('' for none).

return lease(ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5])
