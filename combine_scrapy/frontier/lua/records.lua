-- ARGV: url, host pairs. For each URL: false when unknown, else its retries, status (false: none),
-- visits, changes, first visit (false: none) and last content digest (false: none).

local found = {}
for i = 1, #ARGV, 2 do
  local r = load(ARGV[i + 1], ARGV[i])
  if r then
    table.insert(found, {r.retries, r.status or false, r.visits or 0, r.changes or 0,
                         r.first_visit and num(r.first_visit) or false, r.digest or false})
  else
    table.insert(found, false)
  end
end
return found
