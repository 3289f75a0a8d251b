-- The end of a fetch with the mark of the page's links, in one script on a single Redis: mark.lua's marks, then
-- complete.lua's completion (as a pipeline of the two runs them), with the page's host placed once, by the
-- completion. KEYS: the mark's, then the prefix of the page's bucket. ARGV: how many arguments the completion
-- takes, them, then the mark's.

local given = tonumber(ARGV[1])
local page, links, keys = {}, {}, {}
for j = 1, given do page[j] = ARGV[1 + j] end
for j = given + 2, #ARGV do links[#links + 1] = ARGV[j] end
for k = 1, #KEYS - 1 do keys[k] = KEYS[k] end
local answer, queued = mark_links(keys, links, page[2])
P = KEYS[#KEYS]
complete_page(page, queued)
return answer
