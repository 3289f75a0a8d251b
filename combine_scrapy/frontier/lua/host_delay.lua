-- ARGV: host, Crawl-delay ('' for none).

set_host_delay(ARGV[1], ARGV[2])
