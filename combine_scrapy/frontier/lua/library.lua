-- Shared by every script: KEYS[1] is the key prefix of one bucket of the job (it routes the
-- script to the bucket's slot in a cluster); numbers go to Redis as %.17g so
-- timestamps and priorities round-trip exactly. A URL's record is one
-- MessagePack value in its host's ``u:`` hash, its fields in the order of F.

-- On a single Redis every call's KEYS begin with the job's ``solo`` key and its log, and its ARGV with whether
-- to look at that key (SOLO_CHECKED, '1' or '0'; connection.py puts them there, SOLO_KEYED), taken out here so each
-- script finds its own keys and arguments where they always were; a cluster has none.
local SOLO_KEY, SOLO_LOG, SOLO_CHECKED = false, false, false
if SOLO_KEYED then
  SOLO_KEY, SOLO_LOG = table.remove(KEYS, 1), table.remove(KEYS, 1)
  SOLO_CHECKED = table.remove(ARGV, 1) == '1'
end
local P = KEYS[1]

local function num(x) return string.format('%.17g', x) end

-- The order of marking as a short string that sorts as the number does: its hexadecimal digits after a
-- letter that says how many there are.
local function hexseq(seq)
  local digits = string.format('%x', seq)
  return string.char(96 + #digits) .. digits
end

-- A member of a host's queue is the URL's order of marking (hexseq) then the URL as kept (below); a member of
-- heads or leasedheads the order of marking of the host's best URL then the host. Their parts:
local function seq_part(member) return string.sub(member, 1, string.byte(member) - 95) end
local function after_seq(member) return string.sub(member, string.byte(member) - 94) end
local function unhex(member) return tonumber(string.sub(member, 2, string.byte(member) - 95), 16) end

-- A URL's score in its host's queue: minus its priority times BEST_SCALE (connection.py), never -0; as
-- text, an integer one printed as an integer (several times faster than %.17g, and the same number).
local function best_score(priority) return 0 - priority * BEST_SCALE end
local function best_priority(score) return 0 - tonumber(score) / BEST_SCALE end
local function score_text(score)
  if score == math.floor(score) and score > -1e17 and score < 1e17 then return string.format('%d', score) end
  return num(score)
end

local F = {'marked', 'lock_until', 'priority', 'seq', 'attempts', 'retries', 'status', 'last_checked', 'etag',
           'last_modified', 'distance', 'visits', 'changes', 'first_visit', 'digest'}

-- A URL as its host's structures keep it: 'http://<host>' written ':', 'https://<host>' written ';'. The two
-- prefixes are made once a host and script.
local prefixes = {}
local function short(host, url)
  local known = prefixes[host]
  if not known then
    known = {'http://' .. host, 'https://' .. host}
    known[3], known[4] = #known[1], #known[2]
    prefixes[host] = known
  end
  if string.sub(url, 1, known[3]) == known[1] then return ':' .. string.sub(url, known[3] + 1) end
  if string.sub(url, 1, known[4]) == known[2] then return ';' .. string.sub(url, known[4] + 1) end
  return url
end

local function long(host, kept)
  local mark = string.sub(kept, 1, 1)
  if mark == ':' then return 'http://' .. host .. string.sub(kept, 2) end
  if mark == ';' then return 'https://' .. host .. string.sub(kept, 2) end
  return kept
end

-- A record from its stored value (false or nil: none).
local function unpacked(packed)
  if not packed then return nil end
  local values, r = {cmsgpack.unpack(packed)}, {}
  for i, name in ipairs(F) do r[name] = values[i] end
  r.lock_until, r.attempts, r.retries = r.lock_until or 0, r.attempts or 0, r.retries or 0
  return r
end

-- A stored record's values in the order of F and how many there are (nil for an empty field within): what a
-- script that changes one field repacks with cmsgpack.pack(unpack(values, 1, count)), as packed() would write it.
local function counted(...) return select('#', ...), {...} end
local function record_values(stored) return counted(cmsgpack.unpack(stored)) end

-- What this script writes to hosts' ``u:`` hashes (records, a host's count, its queue's best), by key: sent at its
-- end (flush_records), one HSET a host, so a mark's, a lease's and a completion's writes to one host are one command;
-- the script's own reads see them first (load, host_records).
local pending, pending_keys = {}, {}
local function pending_of(host)
  local key = P .. 'u:' .. host
  local fields = pending[key]
  if not fields then
    fields = {}
    pending[key] = fields
    table.insert(pending_keys, key)
  end
  return fields
end

local function stored_field(host, field)
  local fields = pending[P .. 'u:' .. host]
  local value = fields and fields[field]
  if value ~= nil then return value end
  return redis.call('HGET', P .. 'u:' .. host, field)
end

local function load(host, url)
  return unpacked(stored_field(host, short(host, url)))
end

-- A record as stored: its fields in the order of F, trailing empty ones left out.
local function packed(r)
  local values = {}
  local last = 0
  for i, name in ipairs(F) do
    local value = r[name]
    if value == 0 and (name == 'lock_until' or name == 'attempts' or name == 'retries') then value = nil end
    values[i] = value
    if value ~= nil then last = i end
  end
  return cmsgpack.pack(unpack(values, 1, last))
end

-- A command with a long list of arguments, sent in parts (Lua's unpack takes a few thousand at most), after its
-- ``options`` (nil, one, or a list); an HMGET's answers joined, and the sum of its integer answers (ZADD CH's count).
-- A short list with no list of options goes as it is, no table copied.
local CHUNK = 2000
local function chunked(command, key, options, items)
  if not items[1] then return {}, 0 end
  if #items <= CHUNK and type(options) ~= 'table' then
    local answer
    if options then
      answer = redis.call(command, key, options, unpack(items))
    else
      answer = redis.call(command, key, unpack(items))
    end
    if type(answer) == 'table' then return answer, 0 end
    return {}, type(answer) == 'number' and answer or 0
  end
  local head = {key}
  if type(options) == 'table' then
    for _, option in ipairs(options) do table.insert(head, option) end
  elseif options then
    table.insert(head, options)
  end
  local answers, total = {}, 0
  for at = 1, #items, CHUNK do
    local args = {unpack(head)}
    for k = at, math.min(at + CHUNK - 1, #items) do args[#args + 1] = items[k] end
    local answer = redis.call(command, unpack(args))
    if type(answer) == 'table' then
      for _, value in ipairs(answer) do table.insert(answers, value) end
    elseif type(answer) == 'number' then
      total = total + answer
    end
  end
  return answers, total
end

-- Solo mode (the ``solo`` key names a harvester that works alone, ``solo.py``): that harvester keeps the heads in
-- its memory, so no script keeps ``heads``, ``leasedheads``, ``waiting`` or a host's ``head`` field; where a script
-- would place a host (rehead) it notes instead the host's best queued URL and what ranks it, and the script's
-- notes go to the ``solo_log`` list with one RPUSH at its end (solo_flush), which the solo harvester reads at each
-- look. Whoever writes (that harvester, a console command) notes alike, so its memory misses no change; only
-- another harvester at work looks not (SOLO_CHECKED): a solo harvester still alive finds it at its next renewal
-- and leaves solo mode, the heads made anew from what is stored.
local solo_on, solo_notes = nil, {}
local function solo()
  if solo_on == nil then solo_on = SOLO_CHECKED and redis.call('EXISTS', SOLO_KEY) == 1 end
  return solo_on
end

local function note_text(value)
  if type(value) == 'number' then return num(value) end
  return value or ''
end

-- A host's note: host, its best queued URL's member and score in its queue ('' and '': none queued; '=' and '' for
-- ``top`` nil: as the host's last note said, its queue unchanged since), then its lock_until, leased_until, fetched
-- and relevant ('': absent), one line each; without ``h`` (a re-scoring, which changes no host's fields) only the
-- first three: the rest as the host's last note said.
local function solo_note(host, top, h)
  top = top or {'='}
  local lines = {host, top[1] or '', note_text(top[2])}
  if h then
    lines[4], lines[5], lines[6], lines[7] = note_text(h.lock_until), note_text(h.leased_until), note_text(h.fetched),
                                             note_text(h.relevant)
  end
  table.insert(solo_notes, table.concat(lines, '\n'))
end

local function solo_flush()
  if solo_notes[1] then
    chunked('RPUSH', SOLO_LOG, nil, solo_notes)
    solo_notes = {}
  end
end

-- The field of a host's ``u:`` hash that holds how many URLs of the host were ever marked (its other fields;
-- absent: none), what the bound MaxUrlsPerHost counts, and the one that holds its queue's best member and score
-- (QUEUE_TOP, "member\nscore"; '': none queued; absent: unknown, read from the queue), written by every script that
-- changes the queue: no URL as kept is either.
local URL_COUNT, QUEUE_TOP = '', '^'

-- A queue's best as ZRANGE 0 0 WITHSCORES answers it ({}: none queued), from QUEUE_TOP's text (nil: unknown), and
-- back.
local function top_of(text)
  if not text then return nil end
  local at = string.find(text, '\n', 1, true)
  if not at then return {} end
  return {string.sub(text, 1, at - 1), string.sub(text, at + 1)}
end
local function top_text(top) return top[1] and top[1] .. '\n' .. top[2] or '' end

-- The stored records of a host's URLs ``kept`` (as kept) read with one HMGET (this script's own writes first):
-- their packed records (false: none), in order, then the host's count of URLs ever marked (URL_COUNT, a number) and
-- its queue's best (QUEUE_TOP, as top_of gives it), in the same HMGET.
local function host_records(host, kept)
  local fields = {unpack(kept)}
  table.insert(fields, URL_COUNT)
  table.insert(fields, QUEUE_TOP)
  local stored = chunked('HMGET', P .. 'u:' .. host, nil, fields)
  local written = pending[P .. 'u:' .. host]
  if written then
    for j, field in ipairs(fields) do
      if written[field] ~= nil then stored[j] = written[field] end
    end
  end
  local top = table.remove(stored)
  return stored, tonumber(table.remove(stored) or 0), top_of(top or nil)
end

local function save(host, url, r)
  pending_of(host)[short(host, url)] = packed(r)
end

local function held(host, url) return host .. '\n' .. short(host, url) end

local function split(member)
  local at = string.find(member, '\n', 1, true)
  local host = string.sub(member, 1, at - 1)
  return host, long(host, string.sub(member, at + 1))
end

local function host_lock(host)
  return tonumber(redis.call('HGET', P .. 'host:' .. host, 'lock_until') or 0)
end

-- A host's lock as its score in hostq: added when the caller has just queued a URL of it (the host may not be
-- there yet), else only changed (a host with none queued is not in hostq).
local function lock_in_hostq(host, lock_until, newly_queued)
  if newly_queued then
    redis.call('ZADD', P .. 'hostq', lock_until, host)
  else
    redis.call('ZADD', P .. 'hostq', 'XX', lock_until, host)
  end
end

local function set_host_lock(host, lock_until)
  redis.call('SADD', P .. 'hosts', host)
  redis.call('HSET', P .. 'host:' .. host, 'lock_until', num(lock_until))
  redis.call('ZADD', P .. 'hostq', 'XX', num(lock_until), host)
end

-- Keep a host's delay (its robots.txt Crawl-delay, or longer when it answers slowly; '' for none).
local function set_host_delay(host, delay)
  redis.call('SADD', P .. 'hosts', host)
  if delay == '' then
    redis.call('HDEL', P .. 'host:' .. host, 'delay')
  else
    redis.call('HSET', P .. 'host:' .. host, 'delay', delay)
  end
end

-- A host's lock ending at ``lock_until``, stretched to its delay (host_state's ``delay``, absent: none) counted
-- from ``now``.
local function with_delay(lock_until, now, delay)
  delay = tonumber(delay or 0)
  if delay ~= 0 then return math.max(lock_until, now + delay) end
  return lock_until
end

-- A URL's member in its host's queue.
local function queue_member(host, url, seq) return hexseq(seq) .. short(host, url) end

-- Hosts whose queue this script changed since it last placed or noted them (rehead): in solo mode the note of a host
-- whose queue is as when it was last noted needs not read the queue's best URL (the solo harvester knows it).
local queue_written = {}
-- By bucket prefix and host: each queue's best as this script knows it now (current_top), and the queues this
-- script changed, whose best it writes to QUEUE_TOP at its end (flush_records), each {prefix, host} once.
local tops, changed, changed_order = {}, {}, {}

-- Note that this script changed a host's queue (its best unknown until read or given, set_top).
local function queue_changed(host)
  local key = P .. host
  queue_written[host], tops[key] = true, nil
  if not changed[key] then
    changed[key] = true
    table.insert(changed_order, {P, host})
  end
end

local function set_top(host, top) tops[P .. host] = top end

-- A host's queue's best now, as ZRANGE 0 0 WITHSCORES answers it: read once after each change.
local function current_top(host)
  local top = tops[P .. host]
  if not top then
    top = redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
    tops[P .. host] = top
  end
  return top
end

-- Send this script's writes to the hosts' u: hashes, each changed queue's best with them (its end, before its notes).
local function flush_records()
  for _, found in ipairs(changed_order) do
    P = found[1]
    pending_of(found[2])[QUEUE_TOP] = top_text(current_top(found[2]))
  end
  for _, key in ipairs(pending_keys) do
    local fields = {}
    for field, value in pairs(pending[key]) do
      table.insert(fields, field)
      table.insert(fields, value)
    end
    chunked('HSET', key, nil, fields)
  end
end

-- A URL in its host's queue (adding it again changes nothing: a queued URL keeps its score, its priority).
local function queue_url(url, host, seq, priority)
  redis.call('ZADD', P .. 'q:' .. host, 'NX', score_text(best_score(priority)), queue_member(host, url, seq))
  queue_changed(host)
end

-- A host's first queued URL by order of marking (BreadthFirst's head): its member and score (nil: none queued).
-- The queue is by priority first, so only when its first and last URLs have the same priority is its first the
-- one; else every member is read.
local function first_marked(host)
  local key = P .. 'q:' .. host
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if not first[1] then return nil end
  if redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] == first[2] then return first[1], first[2] end
  local found, found_seq = first[1], unhex(first[1])
  for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    local seq = unhex(member)
    if seq < found_seq then found, found_seq = member, seq end
  end
  if found == first[1] then return found, first[2] end
  return found, redis.call('ZSCORE', key, found)
end

-- Whether a URL (``score`` and order of marking ``seq`` in its queue) comes before another (nil: none), as the
-- queue orders them.
local function comes_before(score, seq, other_score, other_seq)
  return not other_score or score < other_score or (score == other_score and seq < other_seq)
end

-- Whether a URL whose score or place in its queue changed (to ``score``, order of marking ``seq``) may change its
-- host's head, the best URL before (``top_score``, ``top_seq``; nil: none queued): it was that URL, or it now
-- comes before it.
local function may_change_head(score, seq, top_score, top_seq)
  return seq == top_seq or comes_before(score, seq, top_score, top_seq)
end

local function enqueue(url, host, seq, priority)
  queue_url(url, host, seq, priority)
  redis.call('ZADD', P .. 'hostq', 'NX', num(host_lock(host)), host)
end

-- A marked URL waits in the locked set until its lock ends, then in its host's queue.
local function place(url, host, seq, priority, lock_until, now)
  if lock_until > now then
    redis.call('ZADD', P .. 'locked', num(lock_until), held(host, url))
  else
    enqueue(url, host, seq, priority)
  end
end

-- Hosts whose queue lost a URL in this script (unplace): rehead, which reads the host's best URL anyway and
-- runs after every unplace, takes the host out of hostq when that was its last.
local dequeued = {}

-- A member's score in its host's queue (nil: not queued): from the copy of the queue's best this script knows
-- (load_with_top) when it is that member, else read.
local function queued_score(host, member)
  local top = tops[P .. host]
  if top and (not top[1] or top[1] == member) then return top[2] end
  return redis.call('ZSCORE', P .. 'q:' .. host, member) or nil
end

-- A URL's record (nil: none) read with its host's queue's best (QUEUE_TOP, one HMGET), which this script knows from
-- then on unless it changed the queue since (its record as this script wrote it: read alone): a lease reads it,
-- whose URL, the queue's best under BestFirst, then finds its priority there (queued_score), not in the queue.
local function load_with_top(host, url)
  local key, kept = P .. 'u:' .. host, short(host, url)
  local written = pending[key]
  if tops[P .. host] or changed[P .. host] or written and written[kept] ~= nil then return load(host, url) end
  local stored = redis.call('HMGET', key, kept, QUEUE_TOP)
  tops[P .. host] = top_of(stored[2] or nil)
  return unpacked(stored[1])
end

-- Take a URL (its record ``r``) out of the locked set or its host's queue: it is never in both. A URL whose
-- lock_until is 0 has not entered the locked set since its lock was last cleared (every lock that enters it is
-- stored in the record). A queued URL's priority is its queue's score (its record's is as of when it last left
-- the queue): ``r`` takes it, and whoever saves ``r`` stores it.
local function unplace(url, host, r)
  if r.lock_until ~= 0 and redis.call('ZREM', P .. 'locked', held(host, url)) == 1 then return end
  local member = queue_member(host, url, r.seq)
  local score = queued_score(host, member)
  if score then
    r.priority = best_priority(score)
    redis.call('ZREM', P .. 'q:' .. host, member)
    dequeued[host] = true
    queue_changed(host)
  end
end

-- A host's leased_until once its lease ended (by a completion or a release): written in the HSET of its lock, not
-- deleted, a command less; read as absent.
local NO_LEASE = '0'

-- What rehead reads of a host (its ``host:`` hash, one HMGET), and the further fields named after ``host``; a
-- leased_until of NO_LEASE as absent.
local HOST_STATE = {'head', 'lock_until', 'leased_until', 'fetched', 'relevant'}
local function host_state(host, ...)
  local fields = {unpack(HOST_STATE)}
  for _, field in ipairs({...}) do table.insert(fields, field) end
  local values, state = redis.call('HMGET', P .. 'host:' .. host, unpack(fields)), {}
  for i, field in ipairs(fields) do state[field] = values[i] or nil end
  if state.leased_until == NO_LEASE then state.leased_until = nil end
  return state
end

-- End a host's lease in its state and, if it had one, in ``written``, the fields its caller writes (rehead).
local function lease_ended(state, written)
  if state.leased_until then
    table.insert(written, 'leased_until')
    table.insert(written, NO_LEASE)
  end
  state.leased_until = nil
end

-- Place a host among the heads (rehead, outside solo mode), its fields ``h`` as stored: its member taken out of
-- heads, leasedheads or waiting, and put back by its best queued URL ``top`` (read here when nil), the change of
-- its ``head`` field added to ``written`` / ``deleted``. Returns ``top``.
local function place_head(host, free, h, leased, top, written, deleted)
  if leased == nil then leased = h.leased_until ~= nil end
  local old, was_free = h.head, false
  if old then  -- where its lease says, else (never, while every script keeps to this) the other set
    local set = leased and 'leasedheads' or 'heads'
    if redis.call('ZREM', P .. set, old) == 0 then
      set = leased and 'heads' or 'leasedheads'
      if redis.call('ZREM', P .. set, old) == 0 then set = nil end
    end
    was_free = set == 'heads'
  elseif free ~= true and not leased then
    redis.call('ZREM', P .. 'waiting', host)
  end
  top = top or current_top(host)
  local placed
  if top[1] then
    local member, priority = seq_part(top[1]) .. host, best_priority(top[2])
    local fetched = tonumber(h.fetched or 0)
    local recent = (1.0 - YIELD_DECAY ^ fetched) / (1.0 - YIELD_DECAY)
    local weight = (tonumber(h.relevant or 0) + YIELD_PRIOR_RELEVANT) / (recent + YIELD_PRIOR_FETCHED) / (fetched + 1.0) ^ STRIDE_POWER
    local score = num(0 - (priority >= 0 and priority * weight or priority / weight))
    if h.leased_until then
      placed = member
      redis.call('ZADD', P .. 'leasedheads', score, member)
    elseif free or (free == nil and was_free) then
      placed = member
      redis.call('ZADD', P .. 'heads', score, member)
    else
      redis.call('ZADD', P .. 'waiting', h.lock_until or 0, host)
    end
  end
  if placed then
    if placed ~= old then
      table.insert(written, 'head')
      table.insert(written, placed)
    end
  elseif old then
    table.insert(deleted, 'head')
  end
  return top
end

-- The heads of a bucket's hosts with queued URLs, each host in one of three sorted sets: ``heads`` (free hosts)
-- and ``leasedheads`` (hosts with a lease, free or not) by minus the weighted priority of the host's best queued
-- URL, its member that URL's order of marking (as in its queue) then the host, so ties go by order of marking; or
-- ``waiting`` (locked hosts) by when the host unlocks, until a look at the heads (its clock, so the same as the
-- round's) moves it to ``heads``. The host's ``head`` field holds its member of heads or leasedheads. ``free``:
-- true when that look found the host's lock ended, false when its lock changed, nil when its lock is as when
-- it was last placed (it keeps its place); true for a host the caller took out of ``waiting``; 'over' when the
-- caller changed its lock to one already over at the caller's clock (placed in heads at once, as a look would).
-- ``state``: the host's fields (host_state) as stored now, nil to read them here. ``leased``: whether the host
-- was leased when last placed (its head, if any, is in leasedheads, and it is not in waiting: a host is placed
-- again whenever its lease begins or ends), nil when its lease has not changed since. ``top``: the member and
-- score of the host's best queued URL in its queue, when the caller knows it (nil: read here). ``written``: field,
-- value pairs the caller writes to the host's hash, and ``deleted`` fields it deletes from it, in the same HSET
-- and HDEL as its head. In solo mode it places nothing: it notes the host (solo_note; its best URL read only when
-- this script wrote its queue), and still takes a host left with no queued URL out of hostq and writes the caller's
-- fields.
local function rehead(host, free, state, leased, top, written, deleted)
  local h = state or host_state(host)
  written, deleted = written or {}, deleted or {}
  if solo() then
    if not top and queue_written[host] then top = current_top(host) end
    solo_note(host, top, h)
  else
    top = place_head(host, free, h, leased, top, written, deleted)
  end
  if dequeued[host] and not top[1] then redis.call('ZREM', P .. 'hostq', host) end
  dequeued[host], queue_written[host] = nil, nil
  if written[1] then redis.call('HSET', P .. 'host:' .. host, unpack(written)) end
  if deleted[1] then redis.call('HDEL', P .. 'host:' .. host, unpack(deleted)) end
end

-- What ``ready`` answers for a host's head: its first URL of ``queue`` ('best': by priority then order of marking,
-- 'fifo': by order of marking) with the URL's state, the host's lock and yield (as given), and with a depth above 0
-- the members and scores of the first URLs of its queue; false when the queue is empty.
local function head_row(host, queue, lock, fetched, relevant, depth)
  local deeper = depth > 0 and redis.call('ZRANGE', P .. 'q:' .. host, 0, depth - 1, 'WITHSCORES') or nil
  local first, score
  if queue == 'best' then
    local found = deeper or redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
    first, score = found[1], found[2]
  else
    first, score = first_marked(host)
  end
  if not first then return false end
  local url = long(host, after_seq(first))
  local r = load(host, url)   -- its priority is its queue's score
  local row = {url, host, num(best_priority(score)), r.seq, r.etag or false, r.last_modified or false,
               r.distance or 0, lock, fetched or '0', relevant or '0'}
  if deeper then table.insert(row, deeper) end
  return row
end

-- Keep the counters right when a URL's mark or fetched state changes: 'done' (unmarked, with a status) and
-- 'dropped' (unmarked without one); the marked are the rest of 'urls' (operations.counts). A fetch that ends a
-- URL's mark with a status moves it from the marked to done: one HINCRBY.
local function recount(marked_before, done_before, marked_after, done_after)
  local marked = (marked_after and 1 or 0) - (marked_before and 1 or 0)
  local done = (done_after and 1 or 0) - (done_before and 1 or 0)
  if done ~= 0 then redis.call('HINCRBY', P .. 'stats', 'done', done) end
  if marked + done ~= 0 then redis.call('HINCRBY', P .. 'stats', 'dropped', -(marked + done)) end
end

-- Move URLs whose lock has ended back to their hosts' queues; drop those handed out too often.
local function promote(now, max_attempts)
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', P .. 'locked', '-inf', num(now))) do
    local host, url = split(member)
    local r = load(host, url)
    redis.call('ZREM', P .. 'locked', member)
    if r.attempts >= max_attempts then
      r.marked = 0
      save(host, url, r)
      recount(true, false, false, r.status)
    else
      enqueue(url, host, r.seq, r.priority)
      rehead(host, nil)
    end
  end
end

-- Lease a URL and lock its host unless either is taken; a lease ending exactly at ``mine`` is the
-- caller's own and is renewed. ``r``: the URL's record when the caller read it (nil: read here). Returns the URL's
-- record when leased, else false.
local function lease(url, host, now, lease_end, mine, r)
  r = r or load_with_top(host, url)
  if not r or r.marked ~= 1 then return false end
  local state = host_state(host)
  local own, hl = mine ~= '' and r.lock_until == tonumber(mine), tonumber(state.lock_until or 0)
  if own then
    if hl > now and hl ~= tonumber(mine) then return false end
  else
    if r.lock_until > now or hl > now then return false end
    r.attempts = r.attempts + 1
  end
  unplace(url, host, r)
  r.lock_until = tonumber(lease_end)
  save(host, url, r)
  redis.call('ZADD', P .. 'locked', lease_end, held(host, url))
  redis.call('ZADD', P .. 'hostq', 'XX', lease_end, host)
  local leased = state.leased_until ~= nil
  state.lock_until, state.leased_until = lease_end, lease_end
  rehead(host, nil, state, leased, nil, {'lock_until', lease_end, 'leased_until', lease_end})
  return r
end
