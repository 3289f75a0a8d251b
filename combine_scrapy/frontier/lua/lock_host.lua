-- ARGV: host, lock end.

set_host_lock(ARGV[1], tonumber(ARGV[2]))
rehead(ARGV[1], false)
