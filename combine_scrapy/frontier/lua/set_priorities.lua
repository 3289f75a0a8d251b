-- KEYS: the prefixes of the buckets the URLs' hosts are in. ARGV: for each host (each once), the host, its bucket's
-- position in KEYS and how many URLs follow, then each URL as its host's structures keep it (short) and its new
-- score in the host's queue (best_score, as text). A queued URL's priority is its queue's score alone (its
-- record's is as of when it last left the queue): each marked URL's member is scored again with one ZADD XX a
-- host, and only the record of a URL that may be out of its queue (leased, waiting for a retry: its lock_until
-- set) is written, with the new priority it goes back with. The records and the host's queue's best (QUEUE_TOP)
-- are read with one HMGET, of which only each record's first four values are unpacked. The head is placed again
-- only when a changed URL was the queue's best or now comes before it, and the queue's new best is read only when
-- its best before fell: else it is the first of that URL and the changed ones. A host with queued URLs and no head
-- waits for its lock in 'waiting', by when it unlocks, which no priority changes: it stays there. In solo mode,
-- where no host has a head, the host's note gives its new best alone (its fields unchanged).

local at = 1
while at <= #ARGV do
  local host, count = ARGV[at], tonumber(ARGV[at + 2])
  P = KEYS[tonumber(ARGV[at + 1])]
  local first, last = at + 3, at + 2 + 2 * count
  at = last + 1
  local fields = {}
  for i = first, last, 2 do fields[#fields + 1] = ARGV[i] end
  fields[#fields + 1] = QUEUE_TOP
  local stored = chunked('HMGET', P .. 'u:' .. host, nil, fields)
  local top = top_of(table.remove(stored) or nil)
  if not top then top = current_top(host) end
  local top_score, top_seq = top[1] and tonumber(top[2]), top[1] and unhex(top[1])
  -- scores: score, member pairs for the ZADD; placed: whether the head may have changed; top_now: the score of the
  -- best before, now (fell: it is now worse, or a URL maybe out of its queue would pass it: the best unknown);
  -- passing: the first changed URL surely queued (no lock_until) that comes before the best before ({score, seq,
  -- member})
  local scores, placed, top_now, fell, passing = {}, false, top_score, false, nil
  for j = 1, count do
    local value = stored[j]
    if value then
      local marked, lock_until, _, seq = cmsgpack.unpack(value)
      if marked == 1 then
        local kept, score = fields[j], ARGV[first + 2 * j - 1]
        if lock_until then  -- maybe out of its queue: its record holds the priority it goes back with
          local written, values = record_values(value)
          values[3] = best_priority(score)
          pending_of(host)[kept] = cmsgpack.pack(unpack(values, 1, written))
        end
        if top_score then
          local member, number = hexseq(seq) .. kept, tonumber(score)
          scores[#scores + 1] = score
          scores[#scores + 1] = member
          if seq == top_seq then
            placed, top_now, fell = true, number, fell or number > top_score
          elseif comes_before(number, seq, top_score, top_seq) then
            placed = true
            if lock_until then
              fell = true
            elseif not passing or comes_before(number, seq, passing[1], passing[2]) then
              passing = {number, seq, member}
            end
          end
        end
      end
    end
  end
  -- A host with no queued URL has no head, and its marked URLs (leased, waiting for a retry) are in no queue.
  if scores[1] then
    chunked('ZADD', P .. 'q:' .. host, 'XX', scores)
    if placed then  -- else its best is as before, and so its copy (QUEUE_TOP) and its head
      queue_changed(host)
      if not fell then  -- else read when needed
        local best = passing and comes_before(passing[1], passing[2], top_now, top_seq) and passing
                     or {top_now, top_seq, top[1]}
        set_top(host, {best[3], score_text(best[1])})
      end
      if solo() then
        solo_note(host, current_top(host))
      else
        local state = host_state(host)
        if state.head then rehead(host, nil, state) end
      end
    end
  end
end
